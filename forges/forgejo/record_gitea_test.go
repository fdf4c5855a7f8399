package forgejo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
)

var record = flag.Bool("record", false, "record testdata/forgejo/gitea-1.26/ anew from the real Gitea of scripts/gitea.sh (ALFRED_TEST_GITEA_* variables)")

// giteaCorpus is the corpus folder of the deliveries recorded from a real
// Gitea 1.26 by TestRecordGiteaWebhooks -record.
var giteaCorpus = filepath.Join(corpus, "gitea-1.26")

// giteaRecording is one delivery of giteaCorpus: what it must be (the API
// call that causes it is in giteaRecorder.run and the folder's README).
type giteaRecording struct {
	typ    string // X-Gitea-Event-Type
	action string // the payload's action; "" for a payload without one
	hook   string // X-Gitea-Hook-Installation-Target-Type: the webhook it came through
}

// name is the recording's file name without .json: <type>-<action>, or
// <type> for a payload without an action.
func (r giteaRecording) name() string {
	if r.action == "" {
		return r.typ
	}
	return r.typ + "-" + r.action
}

// giteaRecordings are the deliveries of giteaCorpus, in the order the
// recorder causes them: the event types and actions the Forgejo 7.0.16
// recordings lack (see testdata/forgejo/README.md). The repository webhook
// gets every event; the organization webhook only repository and package
// events, which a repository webhook cannot get (the repository does not exist
// yet, or the package is linked to no repository).
var giteaRecordings = []giteaRecording{
	{"repository", "created", "organization"},
	{"fork", "", "repository"},
	{"issue_milestone", "milestoned", "repository"},
	{"pull_request_milestone", "milestoned", "repository"},
	{"pull_request_assign", "unassigned", "repository"},
	{"pull_request_label", "label_cleared", "repository"},
	{"pull_request_comment", "edited", "repository"},
	{"pull_request_comment", "deleted", "repository"},
	{"pull_request_review_request", "review_request_removed", "repository"},
	{"wiki", "created", "repository"},
	{"release", "published", "repository"},
	{"status", "", "repository"},
	{"package", "created", "organization"},
	{"package", "deleted", "repository"},
	{"issues", "deleted", "repository"},
}

// giteaHookEvents are all the events a Gitea 1.26 webhook can choose through
// the API ("issues" and "pull_request" include their sub-events).
var giteaHookEvents = []string{
	"create", "delete", "fork", "push", "repository", "wiki", "release", "package", "status",
	"workflow_run", "workflow_job",
	"issues", "issue_assign", "issue_label", "issue_milestone", "issue_comment",
	"pull_request", "pull_request_assign", "pull_request_label", "pull_request_milestone",
	"pull_request_comment", "pull_request_review", "pull_request_review_request", "pull_request_sync",
}

// TestRecordGiteaWebhooks checks the recordings of giteaCorpus: every
// delivery of giteaRecordings is there, with its headers, named after its
// event type, action and webhook, signed with the recording's secret, named in
// the folder's README, and nothing else is. (What the parser makes of them
// is TestCorpus's job.)
//
// With -record it first records them anew from the real Gitea of
// scripts/gitea.sh (the ALFRED_TEST_GITEA_* variables; Gitea 1.26): in a
// fresh organization of the person, with a fresh repository, it sets the
// webhooks to a listener of the test, makes the API calls that cause each
// delivery and saves it as received: NAME.json the exact body, and
// NAME.headers.json every header, names as sent, in the order received.
// Then run the sweep with -update (see testdata/README.md) and update the
// READMEs. A recording that fails half way leaves the folder half new, and the
// organization on the server for a look: record again.
//
//	env=$(scripts/gitea.sh start) && eval "$env" && go test ./forges/forgejo -run TestRecordGiteaWebhooks -record -v
func TestRecordGiteaWebhooks(t *testing.T) {
	if *record {
		recordGitea(t)
		if t.Failed() {
			return
		}
	}
	checkRecordings(t, giteaCorpus, giteaRecordings, checkGiteaDelivery)
}

// checkGiteaDelivery checks that a delivery is the one r says, and is signed
// with the recording's secret (all four signature headers of Gitea).
func checkGiteaDelivery(t *testing.T, r giteaRecording, h http.Header, body []byte) {
	t.Helper()
	checkSigned(t, r, h, body, "Gitea", map[string]string{
		"X-Gogs-Signature": forges.SignHMACSHA256(fixtureSecret, body), "X-Gitea-Hook-Installation-Target-Type": r.hook,
	})
}

// checkSigned checks what every delivery of the Gitea family carries: its
// signature with the recording's secret (X-Hub-Signature-256 and the
// brand's), its event type under the brand's header and Gitea's, its
// delivery and event headers, its length and its payload's action; and the
// headers of also.
func checkSigned(t *testing.T, r giteaRecording, h http.Header, body []byte, brand string, also map[string]string) {
	t.Helper()
	if err := (Hooks{}).Verify(h, body, []string{fixtureSecret}); err != nil {
		t.Errorf("Verify with the recording's secret: %v", err)
	}
	sig := forges.SignHMACSHA256(fixtureSecret, body)
	want := map[string]string{
		"X-" + brand + "-Signature":  sig,
		"X-Hub-Signature-256":        "sha256=" + sig,
		"X-" + brand + "-Event-Type": r.typ,
		"X-Gitea-Event-Type":         r.typ,
		"Content-Type":               "application/json",
	}
	maps.Copy(want, also)
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if h.Get("X-"+brand+"-Delivery") == "" || h.Get("X-"+brand+"-Event") == "" {
		t.Errorf("no X-%s-Delivery or X-%s-Event: %v", brand, brand, h)
	}
	if n, err := strconv.Atoi(h.Get("Content-Length")); err != nil || n != len(body) {
		t.Errorf("Content-Length %q, body of %d bytes", h.Get("Content-Length"), len(body))
	}
	if a, err := payloadAction(body); err != nil || a != r.action {
		t.Errorf("payload action %q (%v), want %q", a, err, r.action)
	}
}

// payloadAction is the action of a payload, "" when it has none.
func payloadAction(body []byte) (string, error) {
	var p struct {
		Action *string `json:"action"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Action == nil {
		return "", err
	}
	return *p.Action, nil
}

// rawDelivery is a request as the listener received it.
type rawDelivery struct {
	path   string
	fields [][2]string // header fields, names as sent, in the order received
	body   []byte
}

// get is the value of the header field name (case-insensitive), "" when missing.
func (d *rawDelivery) get(name string) string {
	for _, f := range d.fields {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}

// headersJSON is the header fields as a JSON object, in the order received
// (the file scheme of testdata/README.md; a repeated name would be joined
// with ", ", as HTTP reads it).
func (d *rawDelivery) headersJSON() ([]byte, error) {
	var names []string
	vals := map[string]string{}
	for _, f := range d.fields {
		if v, ok := vals[f[0]]; ok {
			vals[f[0]] = v + ", " + f[1]
			continue
		}
		names = append(names, f[0])
		vals[f[0]] = f[1]
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, n := range names {
		k, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(vals[n])
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "  %s: %s", k, v)
		if i < len(names)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func (d *rawDelivery) String() string {
	a, _ := payloadAction(d.body)
	return fmt.Sprintf("%s/%s via %s hook (%s)", d.get("X-Gitea-Event-Type"), a, d.get("X-Gitea-Hook-Installation-Target-Type"), d.get("X-Gitea-Delivery"))
}

// hookListener is an HTTP/1.1 listener on loopback that keeps every request
// as received: net/http would canonicalize the header names (X-GitHub-Event
// becomes X-Github-Event) and lose their order.
type hookListener struct {
	ln      net.Listener
	arrived chan struct{}

	mu      sync.Mutex
	all     []*rawDelivery // every delivery, in the order received
	pending []*rawDelivery // those no wait took yet
	errs    []error
}

func listenHooks(t *testing.T) *hookListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &hookListener{ln: ln, arrived: make(chan struct{}, 1)}
	go l.accept()
	t.Cleanup(func() { ln.Close() })
	return l
}

// URL is the listener's URL for path.
func (l *hookListener) URL(path string) string { return "http://" + l.ln.Addr().String() + path }

func (l *hookListener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.serve(c)
	}
}

// serve reads the requests of a connection and answers each 200.
func (l *hookListener) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		d, err := readRawRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.fail(err)
			}
			return
		}
		l.mu.Lock()
		l.all = append(l.all, d)
		l.pending = append(l.pending, d)
		l.mu.Unlock()
		select {
		case l.arrived <- struct{}{}:
		default:
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
			l.fail(err)
			return
		}
		if strings.EqualFold(d.get("Connection"), "close") {
			return
		}
	}
}

func (l *hookListener) fail(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

// readRawRequest reads one POST request with a Content-Length (what Gitea
// sends); io.EOF at a request's start is the connection's end.
func readRawRequest(br *bufio.Reader) (*rawDelivery, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		if line == "" && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("request line: %w", err)
	}
	parts := strings.Fields(line)
	if len(parts) != 3 || parts[0] != http.MethodPost {
		return nil, fmt.Errorf("request line %q: want a POST", line)
	}
	d := &rawDelivery{path: parts[1]}
	for {
		f, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		f = strings.TrimRight(f, "\r\n")
		if f == "" {
			break
		}
		name, value, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("header field %q", f)
		}
		d.fields = append(d.fields, [2]string{name, strings.TrimSpace(value)})
	}
	n, err := strconv.Atoi(d.get("Content-Length"))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("request without a Content-Length (%q; Transfer-Encoding %q)", d.get("Content-Length"), d.get("Transfer-Encoding"))
	}
	d.body = make([]byte, n)
	if _, err := io.ReadFull(br, d.body); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return d, nil
}

// deliveryTimeout bounds the wait for a delivery.
const deliveryTimeout = 30 * time.Second

// wait returns the first delivery not taken yet that r says, waiting for it
// up to timeout; ok is false when none came.
func (l *hookListener) wait(r giteaRecording, timeout time.Duration) (d *rawDelivery, ok bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for i, d := range l.pending {
			a, _ := payloadAction(d.body)
			if d.get("X-Gitea-Event-Type") == r.typ && a == r.action && (r.hook == "" || d.get("X-Gitea-Hook-Installation-Target-Type") == r.hook) {
				l.pending = slices.Delete(l.pending, i, i+1)
				l.mu.Unlock()
				return d, true
			}
		}
		l.mu.Unlock()
		select {
		case <-l.arrived:
		case <-deadline.C:
			return nil, false
		}
	}
}

// giteaRecorder records giteaRecordings from a real Gitea.
type giteaRecorder struct {
	in    *giteatest.Instance
	hooks *hookListener
	org   string          // the fresh organization of the person
	repo  string          // its fresh repository
	fresh *giteatest.Repo // the repository, when giteatest made it (Forgejo's recorder)
	// saved maps the name of each recording saved to its delivery id, and
	// the delivery id to the file.
	saved map[string]string
}

// recordGitea records giteaRecordings into giteaCorpus; see TestRecordGiteaWebhooks.
func recordGitea(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Gitea)
	if !strings.HasPrefix(in.Version, "1.26.") {
		t.Fatalf("%s is the recording of a Gitea 1.26; this one is %s", giteaCorpus, in.Version)
	}
	r := &giteaRecorder{in: in, hooks: listenHooks(t), saved: map[string]string{}}
	if err := os.MkdirAll(giteaCorpus, 0o755); err != nil {
		t.Fatal(err)
	}
	r.setUp(t)
	r.run(t)
	r.hooks.mu.Lock()
	defer r.hooks.mu.Unlock()
	for _, err := range r.hooks.errs {
		t.Errorf("listener: %v", err)
	}
	t.Logf("%d deliveries, in the order received:", len(r.hooks.all))
	for _, d := range r.hooks.all {
		saved := r.saved[d.get("X-Gitea-Delivery")]
		if saved == "" {
			saved = "not kept"
		}
		t.Logf("  %s: %s", d, saved)
	}
	for _, rec := range giteaRecordings {
		if _, ok := r.saved[rec.name()]; !ok {
			t.Errorf("%s was not recorded", rec.name())
		}
	}
}

// do ends the test when err is set, naming what was done.
func do(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// setUp makes the person's fresh organization (deleted with all it holds
// when the test ends, unless it failed) with a webhook for repository and
// package events.
func (r *giteaRecorder) setUp(t *testing.T) {
	person := r.in.User.Login
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	r.org = "record-" + hex.EncodeToString(suffix[:])
	r.repo = "demo"
	_, _, err := r.in.Client(t, person).CreateOrg(gitea.CreateOrgOption{Name: r.org, Visibility: gitea.VisibleTypePublic})
	do(t, err, "create organization %s as %s", r.org, person)
	t.Cleanup(func() { r.tearDown(t) })
	_, _, err = r.in.Client(t, person).CreateOrgHook(r.org, gitea.CreateHookOption{
		Type: gitea.HookTypeGitea, Active: true, Events: []string{"repository", "package"},
		Config: map[string]string{"url": r.hooks.URL("/org"), "content_type": "json", "secret": fixtureSecret},
	})
	do(t, err, "create the webhook of organization %s", r.org)
}

// tearDown deletes what the recorder made, unless the test failed.
func (r *giteaRecorder) tearDown(t *testing.T) {
	if t.Failed() {
		t.Logf("kept organization %s/%s for a look", r.in.URL, r.org)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := gitea.NewClient(r.in.URL, gitea.SetToken(r.in.Admin.Token), gitea.SetContext(ctx), gitea.SetGiteaVersion(r.in.SDKVersion()))
	if err != nil {
		t.Errorf("clean up: %v", err)
		return
	}
	for _, repo := range [][2]string{{r.in.Bot.Login, r.repo + "-fork-" + r.org}, {r.org, r.repo}} {
		if resp, err := c.DeleteRepo(repo[0], repo[1]); err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
			t.Errorf("delete repository %s/%s: %v", repo[0], repo[1], err)
		}
	}
	if resp, err := c.DeletePackage(r.org, "generic", "recorder", "1.0.0"); err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		t.Errorf("delete package of %s: %v", r.org, err)
	}
	if _, err := c.DeleteOrg(r.org); err != nil {
		t.Errorf("delete organization %s: %v", r.org, err)
	}
}

// expect waits for the delivery of giteaRecordings named name and saves it.
func (r *giteaRecorder) expect(t *testing.T, name string) {
	t.Helper()
	r.expectIn(t, giteaCorpus, giteaRecordings, name)
}

// run makes the API calls that cause each delivery of giteaRecordings, in
// their order.
func (r *giteaRecorder) run(t *testing.T) {
	person, bot := r.in.User.Login, r.in.Bot.Login
	asPerson, asBot, asAdmin := r.in.Client(t, person), r.in.Client(t, bot), r.in.Client(t, "")
	org, repo := r.org, r.repo

	// repository created: only owner and system webhooks can get it.
	_, _, err := asPerson.CreateOrgRepo(org, gitea.CreateRepoOption{Name: repo, AutoInit: true, Readme: "Default", DefaultBranch: "main"})
	do(t, err, "create repository %s/%s", org, repo)
	r.expect(t, "repository-created")

	write := gitea.AccessModeWrite
	_, err = asPerson.AddCollaborator(org, repo, bot, gitea.AddCollaboratorOption{Permission: &write})
	do(t, err, "add %s as a collaborator", bot)
	_, _, err = asPerson.CreateRepoHook(org, repo, gitea.CreateHookOption{
		Type: gitea.HookTypeGitea, Active: true, Events: giteaHookEvents, BranchFilter: "*",
		Config: map[string]string{"url": r.hooks.URL("/repo"), "content_type": "json", "secret": fixtureSecret},
	})
	do(t, err, "create the webhook of %s/%s", org, repo)

	forkName := repo + "-fork-" + org
	_, _, err = asBot.CreateFork(org, repo, gitea.CreateForkOption{Name: &forkName})
	do(t, err, "fork %s/%s as %s", org, repo, bot)
	r.expect(t, "fork")

	issue, _, err := asPerson.CreateIssue(org, repo, gitea.CreateIssueOption{Title: "Resume a session by name", Body: "Let me name a session and resume it later."})
	do(t, err, "open an issue")
	ms, _, err := asPerson.CreateMilestone(org, repo, gitea.CreateMilestoneOption{Title: "v1.0", Description: "First release"})
	do(t, err, "create a milestone")
	_, _, err = asPerson.EditIssue(org, repo, issue.Index, gitea.EditIssueOption{Milestone: &ms.ID})
	do(t, err, "put issue %d in the milestone", issue.Index)
	r.expect(t, "issue_milestone-milestoned")

	const branch = "feature/session-names"
	file, _, err := asPerson.CreateFile(org, repo, "sessions.md", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "Name sessions", BranchName: "main", NewBranchName: branch},
		Content:     base64.StdEncoding.EncodeToString([]byte("Sessions have names.\n")),
	})
	do(t, err, "commit on %s", branch)
	pr, _, err := asPerson.CreatePullRequest(org, repo, gitea.CreatePullRequestOption{Head: branch, Base: "main", Title: "Name sessions", Body: "Closes #" + strconv.FormatInt(issue.Index, 10)})
	do(t, err, "open a pull request")
	_, _, err = asPerson.EditIssue(org, repo, pr.Index, gitea.EditIssueOption{Milestone: &ms.ID})
	do(t, err, "put pull request %d in the milestone", pr.Index)
	r.expect(t, "pull_request_milestone-milestoned")

	_, _, err = asPerson.EditIssue(org, repo, pr.Index, gitea.EditIssueOption{Assignees: []string{bot}})
	do(t, err, "assign pull request %d to %s", pr.Index, bot)
	_, _, err = asPerson.EditIssue(org, repo, pr.Index, gitea.EditIssueOption{Assignees: []string{}})
	do(t, err, "unassign pull request %d", pr.Index)
	r.expect(t, "pull_request_assign-unassigned")

	var labels []int64
	for _, name := range []string{"agent", "status::ready_for_review"} {
		l, _, err := asPerson.CreateLabel(org, repo, gitea.CreateLabelOption{Name: name, Color: "#fbca04"})
		do(t, err, "create label %s", name)
		labels = append(labels, l.ID)
	}
	_, _, err = asPerson.AddIssueLabels(org, repo, pr.Index, gitea.IssueLabelsOption{Labels: labels})
	do(t, err, "label pull request %d", pr.Index)
	_, err = asPerson.ClearIssueLabels(org, repo, pr.Index)
	do(t, err, "clear the labels of pull request %d", pr.Index)
	r.expect(t, "pull_request_label-label_cleared")

	comment, _, err := asBot.CreateIssueComment(org, repo, pr.Index, gitea.CreateIssueCommentOption{Body: "I will take this one."})
	do(t, err, "comment on pull request %d", pr.Index)
	_, _, err = asBot.EditIssueComment(org, repo, comment.ID, gitea.EditIssueCommentOption{Body: "I will take this one tomorrow."})
	do(t, err, "edit comment %d", comment.ID)
	r.expect(t, "pull_request_comment-edited")
	_, err = asBot.DeleteIssueComment(org, repo, comment.ID)
	do(t, err, "delete comment %d", comment.ID)
	r.expect(t, "pull_request_comment-deleted")

	_, err = asPerson.CreateReviewRequests(org, repo, pr.Index, gitea.PullReviewRequestOptions{Reviewers: []string{bot}})
	do(t, err, "request a review of %s", bot)
	_, err = asPerson.DeleteReviewRequests(org, repo, pr.Index, gitea.PullReviewRequestOptions{Reviewers: []string{bot}})
	do(t, err, "remove the review request of %s", bot)
	r.expect(t, "pull_request_review_request-review_request_removed")

	_, _, err = asPerson.CreateWikiPage(org, repo, gitea.CreateWikiPageOptions{
		Title: "Home", ContentBase64: base64.StdEncoding.EncodeToString([]byte("# Sessions\n\nHow to name them.\n")), Message: "Start the wiki",
	})
	do(t, err, "create a wiki page")
	r.expect(t, "wiki-created")

	_, _, err = asPerson.CreateRelease(org, repo, gitea.CreateReleaseOption{TagName: "v1.0.0", Target: "main", Title: "v1.0.0", Note: "First release."})
	do(t, err, "create a release")
	r.expect(t, "release-published")

	_, _, err = asBot.CreateStatus(org, repo, file.Commit.SHA, gitea.CreateStatusOption{
		State: gitea.StatusSuccess, TargetURL: "http://ci.alfred.invalid/runs/1", Description: "12 tests passed", Context: "ci/test",
	})
	do(t, err, "set a commit status on %s", file.Commit.SHA)
	r.expect(t, "status")

	// A generic package is uploaded with the person's token (the package
	// registry takes no sudo), owned by the organization and linked to no
	// repository: only owner and system webhooks get its creation. Linked,
	// its deletion goes to the repository's webhook too.
	r.uploadPackage(t, org, "recorder", "1.0.0", "hello.txt", "hello\n")
	r.expect(t, "package-created")
	_, err = asPerson.LinkPackage(org, "generic", "recorder", repo)
	do(t, err, "link the package to %s/%s", org, repo)
	_, err = asPerson.DeletePackage(org, "generic", "recorder", "1.0.0")
	do(t, err, "delete the package")
	r.expect(t, "package-deleted")

	_, err = asAdmin.DeleteIssue(org, repo, issue.Index)
	do(t, err, "delete issue %d as the admin", issue.Index)
	r.expect(t, "issues-deleted")
}

// uploadPackage uploads a file of a generic package of owner through Gitea's
// package registry, with the person's token.
func (r *giteaRecorder) uploadPackage(t *testing.T, owner, name, version, file, content string) {
	t.Helper()
	url := fmt.Sprintf("%s/api/packages/%s/generic/%s/%s/%s", r.in.URL, owner, name, version, file)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, url, strings.NewReader(content))
	do(t, err, "upload package")
	req.Header.Set("Authorization", "token "+r.in.User.Token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	do(t, err, "upload package %s/%s %s", owner, name, version)
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload package %s/%s %s: HTTP %d: %s", owner, name, version, resp.StatusCode, answer)
	}
}
