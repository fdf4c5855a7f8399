package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/forges/gitlab/gitlabtest"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2EMultiForge: one bot process works on two forges, the Forgejo fake
// and the GitLab fake, each with its git served over HTTP, both configured
// by [forge NAME] sections of its configuration file, each with its own
// token, webhook route and secret. An issue is opened on each and assigned
// to the bot on both at the same moment; the two analyses run at the same
// time, through Claude Code in Docker; each forge hears only of its own
// issue. A webhook with the other forge's secret is refused on each route,
// and the configuration page lists both webhook URLs.
func TestE2EMultiForge(t *testing.T) {
	started := time.Now()
	dockerHost, image, instance := agentImage(t)
	fj, gl := newFakeWorld(t), newGitLabWorld(t)
	const fjSecret, glSecret = "fj-hook-s3cret", "gl-hook-s3cret"
	cfg := filepath.Join(t.TempDir(), "alfred.env")
	content := fmt.Sprintf(`# one bot, two forges; the tokens come from the environment
[forge forgejo]
ALFRED_FORGE=forgejo
ALFRED_FORGE_URL=%s
ALFRED_FORGE_TOKEN=$E2E_FORGEJO_TOKEN
ALFRED_WEBHOOK_SECRETS=%s
[forge gitlab]
ALFRED_FORGE=gitlab
ALFRED_FORGE_URL=%s
ALFRED_FORGE_TOKEN=${E2E_GITLAB_TOKEN}
ALFRED_WEBHOOK_SECRETS=%s
`, fj.fj.URL(), fjSecret, gl.gl.URL(), glSecret)
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBot(t, []string{"ALFRED_CONFIG=" + cfg, "E2E_FORGEJO_TOKEN=" + forgejotest.BotToken, "E2E_GITLAB_TOKEN=" + gl.gl.Token()},
		dockerHost, image, instance)

	type side struct {
		forge, owner, name, title, desc, secret, bot, url string
		w                                                 world
		n                                                 int64
		key                                               state.MailboxKey
		mb                                                state.Mailbox
		runs                                              []state.Run
		sessions                                          []state.LLMSession
	}
	sides := []*side{
		{forge: "forgejo", w: fj, title: "Greet the Forgejo users", desc: "The Forgejo demo should greet its users.",
			secret: fjSecret, bot: forgejotest.Bot, url: fj.fj.URL()},
		{forge: "gitlab", w: gl, title: "Greet the GitLab users", desc: "The GitLab demo should greet its users.",
			secret: glSecret, bot: gl.gl.BotLogin(), url: gl.gl.URL()},
	}
	other := func(s *side) *side {
		if s == sides[0] {
			return sides[1]
		}
		return sides[0]
	}
	for _, s := range sides {
		p := s.w.project()
		i := strings.LastIndex(p, "/")
		s.owner, s.name = p[:i], p[i+1:]
		if out := b.run("labels", "sync", "-project", s.forge+":"+p); !strings.Contains(out, "19 labels created") {
			t.Fatalf("labels sync on %s: %s", s.forge, out)
		}
	}
	b.serve()
	for _, s := range sides {
		s.w.hook("http://"+b.addr+"/webhooks/"+s.forge, s.secret)
	}
	waitFor(t, time.Minute, "claude-code detected as resumable", func() (ok bool) {
		b.look(func(st *state.Store) {
			all, _ := st.Installations()
			for _, in := range all {
				ok = ok || in.AdapterID == "claude-code" && in.Image == image && in.ResumableSessions
			}
		})
		return ok
	})
	ready := time.Since(started)

	// One issue on each forge, number 1 on both; both assigned at once.
	for _, s := range sides {
		s.n = s.w.openIssue(s.title, s.desc, "type::task")
		s.key = state.MailboxKey{Forge: s.forge, Owner: s.owner, Project: s.name, Kind: state.KindIssue, IID: s.n}
	}
	now := make(chan struct{})
	statuses := make([]int, len(sides))
	errs := make([]error, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-now
			statuses[i], errs[i] = s.w.(trier).tryAssign(s.n)
		}()
	}
	assigned := time.Now()
	close(now)
	wg.Wait()
	for i, s := range sides {
		if errs[i] != nil || statuses[i] != http.StatusAccepted {
			t.Fatalf("assignment on %s: %d %v", s.forge, statuses[i], errs[i])
		}
	}
	waitFor(t, 4*time.Minute, "both issues waiting for validation", func() (ok bool) {
		b.look(func(st *state.Store) {
			ok = true
			for _, s := range sides {
				m, err := st.Mailbox(s.key)
				if err != nil || m.Status != "waiting_validation" || m.ActiveRunID != "" {
					ok = false
					return
				}
				s.mb, s.sessions = m, nil
				s.runs, _ = st.Runs(m.ID)
				for _, r := range s.runs {
					_, ls, _ := st.RunWithSessions(r.ID)
					s.sessions = append(s.sessions, ls...)
				}
			}
		})
		return ok
	})
	bothDone := time.Since(assigned)

	// Two mailboxes, one per forge, each with its one analysis.
	var all []state.Mailbox
	b.look(func(st *state.Store) { all, _ = st.Mailboxes() })
	if len(all) != 2 {
		t.Errorf("%d mailboxes, want 2: %+v", len(all), all)
	}
	for _, s := range sides {
		mb := s.mb
		if !strings.HasPrefix(mb.ID, s.forge+"/") || mb.Forge != s.forge || !strings.HasPrefix(mb.IssueURL, s.url+"/") || mb.Title != s.title {
			t.Errorf("%s mailbox: id %q forge %q url %q title %q", s.forge, mb.ID, mb.Forge, mb.IssueURL, mb.Title)
		}
		if len(s.runs) != 1 || s.runs[0].Phase != "analysis" || s.runs[0].MailboxID != mb.ID || len(s.sessions) != 1 {
			t.Fatalf("%s: runs %+v sessions %+v, want its one analysis", s.forge, s.runs, s.sessions)
		}
		branch := fmt.Sprintf("agent/issue-%d-%s", s.n, strings.ReplaceAll(strings.ToLower(s.title), " ", "-"))
		if l := s.sessions[0]; l.SessionName == nil || *l.SessionName != branch || l.NativeSessionID == nil || l.Outcome != "succeeded" {
			t.Errorf("%s session: %+v, want %s", s.forge, l, branch)
		}
	}
	fr, gr := sides[0].runs[0], sides[1].runs[0]
	if !fr.StartedAt.Before(gr.FinishedAt) || !gr.StartedAt.Before(fr.FinishedAt) {
		t.Errorf("the analyses did not run at the same time: forgejo %s-%s, gitlab %s-%s",
			fr.StartedAt.Format(time.StampMilli), fr.FinishedAt.Format(time.StampMilli), gr.StartedAt.Format(time.StampMilli), gr.FinishedAt.Format(time.StampMilli))
	}
	if *sides[0].sessions[0].NativeSessionID == *sides[1].sessions[0].NativeSessionID {
		t.Error("the two issues share one agent session")
	}

	// Each forge's issue: the bot's comments, in its own account there, the
	// status label, the functional analysis in its section under its own
	// description; and nothing of the other issue.
	kinds := map[string]map[string]int{}
	for _, s := range sides {
		o := other(s)
		body, labels, comments := s.w.issue(s.n)
		// The status label in the form of each forge (ALFRED_STATUS_LABELS
		// scoped): exclusive "status/x" on Forgejo, "status::x" on GitLab.
		status := map[string]string{"forgejo": "status/", "gitlab": "status::"}[s.forge] + "waiting_validation"
		if !contains(labels, status) || !contains(labels, "type::task") {
			t.Errorf("%s labels: %q", s.forge, labels)
		}
		if sec := section(body); !strings.Contains(sec, "The demo should greet its users.") || !strings.Contains(body, s.desc) || strings.Contains(sec, s.desc) {
			t.Errorf("%s description: %q", s.forge, body)
		}
		kinds[s.forge] = map[string]int{}
		for _, c := range comments {
			if _, k, ok := forges.ParseMarker(c.Body); ok {
				kinds[s.forge][k]++
				if c.Author != s.bot {
					t.Errorf("%s: the bot's %s comment by %q, want %q", s.forge, k, c.Author, s.bot)
				}
			}
		}
		if len(kinds[s.forge]) == 0 {
			t.Errorf("%s: no comment of the bot: %+v", s.forge, comments)
		}
		text := body
		for _, c := range comments {
			text += "\n" + c.Body
		}
		for _, leak := range []string{o.title, o.desc, o.mb.ID, o.url, *o.sessions[0].NativeSessionID, o.runs[0].ID, o.owner + "/" + o.name} {
			if strings.Contains(text, leak) {
				t.Errorf("the %s issue shows %q of the %s issue:\n%s", s.forge, leak, o.forge, text)
			}
		}
		if _, _, more := s.w.issue(s.n + 1); len(more) != 0 {
			t.Errorf("%s: comments on issue %d, which nobody opened", s.forge, s.n+1)
		}
	}
	if fmt.Sprint(kinds["forgejo"]) != fmt.Sprint(kinds["gitlab"]) {
		t.Errorf("the bot's comments differ between the forges: forgejo %v, gitlab %v", kinds["forgejo"], kinds["gitlab"])
	}
	if mrs := gl.gl.MergeRequests(); len(mrs) != 0 {
		t.Errorf("merge requests on GitLab: %+v", mrs)
	}
	// Each issue's agent session state in its own folder.
	for _, forge := range []string{"forgejo", "gitlab"} {
		if dirs, _ := os.ReadDir(filepath.Join(b.data, ".agent-sessions", forge)); len(dirs) != 1 {
			t.Errorf("session folders of %s: %v, want its issue's", forge, dirs)
		}
	}

	// Every webhook so far, the bot's own changes' included, was taken.
	fj.fj.Flush()
	gl.gl.Flush()
	for _, d := range fj.fj.Deliveries() {
		if d.Status != http.StatusAccepted && d.Status != http.StatusOK {
			t.Errorf("forgejo webhook %s %s/%s answered %d %v", d.ID, d.Event, d.Action, d.Status, d.Err)
		}
	}
	glHooks := map[string]int{}
	for _, d := range gl.gl.Deliveries() {
		glHooks[d.Event]++
		if d.Status != http.StatusAccepted && d.Status != http.StatusOK {
			t.Errorf("gitlab webhook %s %s/%s answered %d %v", d.UUID, d.Event, d.Action, d.Status, d.Err)
		}
	}
	if glHooks["Note Hook"] == 0 || glHooks["Issue Hook"] < 3 {
		t.Errorf("GitLab's webhooks: %v; want the bot's notes and issue changes too", glHooks)
	}

	// A webhook with the other forge's secret is refused on each route, and
	// so is one forge's delivery on the other's route, and one with the
	// secret of the variables (newBot's ALFRED_WEBHOOK_SECRETS), which
	// describe no forge here.
	for _, s := range sides {
		o := other(s)
		route := "http://" + b.addr + "/webhooks/" + s.forge
		for _, try := range []struct {
			what   string
			w      world
			n      int64
			secret string
		}{
			{s.forge + "'s webhook with " + o.forge + "'s secret", s.w, s.n, o.secret},
			{o.forge + "'s webhook with " + s.forge + "'s secret", o.w, o.n, s.secret},
			{s.forge + "'s webhook with the variables' secret", s.w, s.n, "s3cret"},
		} {
			try.w.hook(route, try.secret)
			if st, err := try.w.(trier).tryComment(try.n, "Refused, I hope."); err != nil || st != http.StatusUnauthorized {
				t.Errorf("/webhooks/%s, %s: %d %v, want 401", s.forge, try.what, st, err)
			}
		}
	}
	for _, s := range sides {
		s.w.hook("http://"+b.addr+"/webhooks/"+s.forge, s.secret)
	}

	// The configuration page lists both forges and their webhook URLs, and
	// no token or secret.
	resp, err := http.Get("http://" + b.addr + "/config")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-test="configured"`) {
		t.Errorf("/config: %d, not configured:\n%s", resp.StatusCode, page)
	}
	for _, s := range sides {
		for _, want := range []string{`data-test="webhook-url">/webhooks/` + s.forge + `<`, fmt.Sprintf("Forge %s (%s at %s)", s.forge, s.forge, s.url)} {
			if !strings.Contains(string(page), want) {
				t.Errorf("/config lacks %q", want)
			}
		}
	}
	for _, secret := range []string{fjSecret, glSecret, forgejotest.BotToken, gl.gl.Token()} {
		if strings.Contains(string(page), secret) {
			t.Error("/config shows a secret")
		}
	}

	// Both forges counted apart: webhooks accepted and refused, API calls.
	body := (&scenario{t: t, b: b}).scrape()
	for _, s := range sides {
		for _, series := range []string{
			`alfred_webhooks_total{forge="` + s.forge + `",outcome="accepted"}`,
			`alfred_forge_calls_total{forge="` + s.forge + `",method="GET",status="2xx"}`,
			`alfred_forge_calls_total{forge="` + s.forge + `",method="POST",status="2xx"}`,
		} {
			if n := seriesValue(body, series); n < 1 {
				t.Errorf("%s = %v, want at least 1", series, n)
			}
		}
		if n := seriesValue(body, `alfred_webhooks_total{forge="`+s.forge+`",outcome="rejected"}`); n != 3 {
			t.Errorf("%s: %v webhooks rejected, want 3", s.forge, n)
		}
	}
	for _, absent := range []string{`alfred_panics_recovered_total{`, `alfred_routing_errors_total{`, `outcome="error"`} {
		if strings.Contains(body, absent) {
			t.Errorf("/metrics has %s", absent)
		}
	}
	t.Logf("multi-forge e2e wall time %s: image, bot, labels and detection %s; both assignments to both analyses done %s (forgejo run %s, gitlab run %s)",
		time.Since(started).Round(time.Millisecond), ready.Round(time.Millisecond), bothDone.Round(time.Millisecond),
		fr.FinishedAt.Sub(fr.StartedAt).Round(time.Millisecond), gr.FinishedAt.Sub(gr.StartedAt).Round(time.Millisecond))
}

// trier is what the test does from several goroutines at once: it
// reports instead of failing the test.
type trier interface {
	// tryAssign assigns issue n to the bot and returns the status the
	// bot's webhook endpoint answered.
	tryAssign(n int64) (int, error)
	// tryComment comments on issue n as the project's person.
	tryComment(n int64, body string) (int, error)
}

func (w *fakeWorld) tryAssign(n int64) (int, error) {
	d, err := w.fj.ActAssign(n, forgejotest.Bot, forgejotest.Owner)
	return d.Status, cmpErr(err, d.Err)
}

func (w *fakeWorld) tryComment(n int64, body string) (int, error) {
	d, err := w.fj.ActComment(n, forgejotest.Owner, body)
	return d.Status, cmpErr(err, d.Err)
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// gitlabWorld is the world on gitlabtest: a project in a nested group
// (acme/platform/demo) whose git is a bare repository the test made, served
// over HTTP; alice, a developer of the project, acts there.
type gitlabWorld struct {
	t    testing.TB
	gl   *gitlabtest.Server
	bare string
	next int64
}

var _ world = (*gitlabWorld)(nil)

// gitlabPerson is the project's person on GitLab.
const gitlabPerson = "alice"

func newGitLabWorld(t testing.TB) *gitlabWorld {
	gl := gitlabtest.NewServer(t)
	bare := filepath.Join(t.TempDir(), "demo.git")
	seedRepo(t, bare)
	if err := gl.ServeGit(bare); err != nil {
		t.Fatal(err)
	}
	gl.SetUser(gitlabPerson, forges.PermissionWrite)
	return &gitlabWorld{t: t, gl: gl, bare: bare}
}

func (w *gitlabWorld) forgeEnv() []string {
	return []string{"ALFRED_FORGE=gitlab", "ALFRED_FORGE_URL=" + w.gl.URL(), "ALFRED_FORGE_TOKEN=" + w.gl.Token()}
}

func (w *gitlabWorld) project() string { return w.gl.Project().FullName() }

func (w *gitlabWorld) hook(url, secret string) { w.gl.SetWebhook(url, secret) }

func (w *gitlabWorld) accepted(d gitlabtest.Delivery, err error) {
	w.t.Helper()
	if err != nil || d.Err != nil || d.Status != http.StatusAccepted {
		w.t.Fatalf("webhook: %+v %v", d, err)
	}
}

func (w *gitlabWorld) openIssue(title, body string, labels ...string) int64 {
	w.t.Helper()
	w.next++
	d, err := w.gl.ActOpenIssue(forges.Issue{Number: w.next, Title: title, Body: body, Author: gitlabPerson, Labels: labels})
	if err != nil || d.Err != nil || d.Status != 0 && d.Status != http.StatusAccepted && d.Status != http.StatusOK {
		w.t.Fatalf("open issue: %+v %v", d, err)
	}
	return w.next
}

func (w *gitlabWorld) assign(n int64) { w.accepted(w.gl.ActAssign(n, w.gl.BotLogin(), gitlabPerson)) }

func (w *gitlabWorld) tryAssign(n int64) (int, error) {
	d, err := w.gl.ActAssign(n, w.gl.BotLogin(), gitlabPerson)
	return d.Status, cmpErr(err, d.Err)
}

func (w *gitlabWorld) tryComment(n int64, body string) (int, error) {
	d, err := w.gl.ActComment(n, gitlabPerson, body)
	return d.Status, cmpErr(err, d.Err)
}

func (w *gitlabWorld) label(n int64, add, remove []string) {
	w.accepted(w.gl.ActLabel(n, gitlabPerson, add, remove))
}

// status runs a pipeline for sha with one job in state: the bot finds it by
// polling, as with Forgejo's commit statuses.
func (w *gitlabWorld) status(sha, st, description string) {
	s := map[string]forges.CIState{"success": forges.CISuccess, "failure": forges.CIFailure, "pending": forges.CIPending}[st]
	w.gl.AddCI(sha, []forges.Check{{Name: "ci/test", State: s, Description: description}})
}

func (w *gitlabWorld) review(n int64, body string) {
	w.accepted(w.gl.ActReviewComment(n, gitlabPerson, body))
}

func (w *gitlabWorld) close(n int64) { w.accepted(w.gl.ActClose(n, gitlabPerson)) }

func (w *gitlabWorld) issue(n int64) (string, []string, []forges.Comment) {
	is, _ := w.gl.Issue(n)
	return is.Body, is.Labels, w.gl.Comments(forges.Target{Kind: forges.TargetIssue, Number: n})
}

func (w *gitlabWorld) file(sha, path string) string { return gitShow(w.bare, sha, path) }

func (w *gitlabWorld) files(sha string) []string { return gitLsTree(w.bare, sha) }
