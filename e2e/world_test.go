package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
)

// world is the forge as the scenario's person sees it: what alice does there,
// and what the test reads back. fakeWorld plays it on the Forgejo fake,
// giteaWorld on a real Gitea or Forgejo.
type world interface {
	// forgeEnv is the bot's forge configuration (ALFRED_FORGE...).
	forgeEnv() []string
	// project is OWNER/NAME.
	project() string
	// hook points the repository's webhook at url with the secret.
	hook(url, secret string)
	// openIssue opens an issue as alice and returns its number.
	openIssue(title, body string, labels ...string) int64
	// assign assigns issue n to the bot.
	assign(n int64)
	// label adds and removes labels of issue n as alice.
	label(n int64, add, remove []string)
	// status records a commit status of sha.
	status(sha, state, description string)
	// review asks for changes on merge request n.
	review(n int64, body string)
	// close closes issue n.
	close(n int64)
	// issue reads issue n: its description, labels and comments.
	issue(n int64) (body string, labels []string, comments []forges.Comment)
	// file reads path at commit sha of the repository ("" when missing), and
	// files lists the tree's top level.
	file(sha, path string) string
	files(sha string) []string
}

// fakeWorld is the world on forgejotest, whose git is a bare repository the
// test made, served over HTTP.
type fakeWorld struct {
	t    testing.TB
	fj   *forgejotest.Server
	bare string
	next int64
}

func newFakeWorld(t testing.TB) *fakeWorld {
	fj := forgejotest.NewServer(t)
	bare := filepath.Join(t.TempDir(), "demo.git")
	seedRepo(t, bare)
	if err := fj.ServeGit(bare); err != nil {
		t.Fatal(err)
	}
	return &fakeWorld{t: t, fj: fj, bare: bare}
}

func (w *fakeWorld) forgeEnv() []string {
	return []string{"ALFRED_FORGE=forgejo", "ALFRED_FORGE_URL=" + w.fj.URL(), "ALFRED_FORGE_TOKEN=" + forgejotest.BotToken}
}

func (w *fakeWorld) project() string { return forgejotest.Owner + "/" + forgejotest.Repo }

func (w *fakeWorld) hook(url, secret string) { w.fj.SetWebhook(url, secret) }

func (w *fakeWorld) openIssue(title, body string, labels ...string) int64 {
	w.next++
	w.fj.ActOpenIssue(forges.Issue{Number: w.next, Title: title, Body: body, Author: forgejotest.Owner, Labels: labels})
	return w.next
}

func (w *fakeWorld) accepted(d forgejotest.Delivery, err error) {
	w.t.Helper()
	if err != nil || d.Status != http.StatusAccepted {
		w.t.Fatalf("webhook: %+v %v", d, err)
	}
}

func (w *fakeWorld) assign(n int64) {
	w.accepted(w.fj.ActAssign(n, forgejotest.Bot, forgejotest.Owner))
}

func (w *fakeWorld) label(n int64, add, remove []string) {
	w.accepted(w.fj.ActLabel(n, forgejotest.Owner, add, remove))
}

func (w *fakeWorld) status(sha, state, description string) {
	w.fj.AddStatus(sha, "ci/test", state, description, "")
}

func (w *fakeWorld) review(n int64, body string) {
	w.accepted(w.fj.ActReview(n, forgejotest.Owner, "REQUEST_CHANGES", body))
}

func (w *fakeWorld) close(n int64) { w.accepted(w.fj.ActClose(n, forgejotest.Owner)) }

func (w *fakeWorld) issue(n int64) (string, []string, []forges.Comment) {
	is, _ := w.fj.Issue(n)
	return is.Body, is.Labels, is.Comments
}

func (w *fakeWorld) file(sha, path string) string { return gitShow(w.bare, sha, path) }

func (w *fakeWorld) files(sha string) []string { return gitLsTree(w.bare, sha) }

func gitShow(repo, sha, path string) string {
	out, _ := exec.Command("git", "-C", repo, "show", sha+":"+path).Output()
	return string(out)
}

func gitLsTree(repo, sha string) []string {
	out, _ := exec.Command("git", "-C", repo, "ls-tree", "--name-only", sha).Output()
	return strings.Fields(string(out))
}

func randomSuffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
