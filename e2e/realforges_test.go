package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2ETwoRealForges: one bot process serves the real Gitea and the real
// Forgejo at once, each a [forge NAME] section of its configuration, and
// starts as a service does while the Forgejo does not answer: nothing
// listens on the Forgejo address the bot is given (connection refused) at
// its start, and for 30 s after it. The bot serves from the start, says on
// /readyz, the home page and the metrics that the Forgejo is unreachable
// and since when, works the Gitea issue meanwhile, accepts the Forgejo
// webhook of the issue assigned there; once the address answers (a proxy to
// the real Forgejo opens on it) the Forgejo issue is worked too, and the
// notes go.
func TestE2ETwoRealForges(t *testing.T) {
	started := time.Now()
	gt := newGiteaWorld(t, giteatest.FromEnv(t, giteatest.Gitea))
	fj := newGiteaWorld(t, giteatest.FromEnv(t, giteatest.Forgejo))
	late := freeAddr(t) // the Forgejo's address for the bot: closed for now
	const gtSecret, fjSecret = "gt-hook-s3cret", "fj-hook-s3cret"
	cfg := filepath.Join(t.TempDir(), "alfred.env")
	content := fmt.Sprintf(`# one bot, the real Gitea and the real Forgejo
[forge gitea]
ALFRED_FORGE=forgejo
ALFRED_FORGE_URL=%s
ALFRED_FORGE_TOKEN=$E2E_GITEA_TOKEN
ALFRED_WEBHOOK_SECRETS=%s
[forge forgejo]
ALFRED_FORGE=forgejo
ALFRED_FORGE_URL=http://%s
ALFRED_FORGE_TOKEN=$E2E_FORGEJO_TOKEN
ALFRED_WEBHOOK_SECRETS=%s
`, gt.in.URL, gtSecret, late, fjSecret)
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	dockerHost, image, instance := agentImage(t)
	b := newBot(t, []string{"ALFRED_CONFIG=" + cfg, "E2E_GITEA_TOKEN=" + gt.in.Bot.Token, "E2E_FORGEJO_TOKEN=" + fj.in.Bot.Token},
		dockerHost, image, instance)
	if out := b.run("labels", "sync", "-project", "gitea:"+gt.project()); !strings.Contains(out, "19 labels created") {
		t.Fatalf("labels sync on the Gitea: %s", out)
	}
	syncDirect(t, b, fj)

	b.serve() // ready although the Forgejo does not answer
	bootAt := time.Now()
	health := get(t, "http://"+b.addr+"/readyz")
	if !strings.Contains(health, "forge forgejo unreachable since") || !strings.Contains(health, "connection refused") ||
		strings.Contains(health, "forge gitea unreachable") {
		t.Fatalf("/readyz while the Forgejo is down:\n%s", health)
	}
	if home := get(t, "http://"+b.addr+"/"); !strings.Contains(home, "forge forgejo unreachable since") {
		t.Errorf("the home page does not say the Forgejo is unreachable:\n%s", home)
	}
	metrics := get(t, "http://"+b.addr+"/metrics")
	if seriesValue(metrics, `alfred_forge_up{forge="forgejo"}`) != 0 || seriesValue(metrics, `alfred_forge_up{forge="gitea"}`) != 1 ||
		seriesValue(metrics, `alfred_forge_down_since_seconds{forge="forgejo"}`) < float64(started.Unix()) {
		t.Errorf("the metrics while the Forgejo is down:\n%s", grepLines(metrics, "alfred_forge_"))
	}

	gt.hook("http://"+b.addr+"/webhooks/gitea", gtSecret)
	fj.hook("http://"+b.addr+"/webhooks/forgejo", fjSecret)
	type side struct {
		w   *giteaWorld
		key state.MailboxKey
	}
	sides := map[string]*side{"gitea": {w: gt}, "forgejo": {w: fj}}
	for forge, s := range sides {
		n := s.w.openIssue("Greet the "+s.w.in.Title()+" users", "The demo should greet its users.", "type::task")
		s.key = state.MailboxKey{Forge: forge, Owner: s.w.repo.Owner, Project: s.w.repo.Name, Kind: state.KindIssue, IID: n}
		s.w.assign(n)
	}
	analysed := func(s *side) (ok bool) {
		b.look(func(st *state.Store) {
			m, err := st.Mailbox(s.key)
			ok = err == nil && m.Status == "waiting_validation" && m.ActiveRunID == ""
		})
		return ok
	}
	waitFor(t, 3*time.Minute, "the Gitea issue analysed while the Forgejo is down", func() bool { return analysed(sides["gitea"]) })
	b.look(func(st *state.Store) {
		if m, err := st.Mailbox(sides["forgejo"].key); err == nil && m.ID != "" {
			t.Fatalf("the Forgejo issue has a mailbox while its forge is unreachable: %+v", m)
		}
	})
	if _, _, comments := fj.issue(sides["forgejo"].key.IID); len(comments) != 0 {
		t.Fatalf("the bot said something on the Forgejo while it could not reach it: %+v", comments)
	}

	// 30 s after the bot's start, the Forgejo answers on its address.
	time.Sleep(time.Until(bootAt.Add(30 * time.Second)))
	openLate(t, late, fj.in.URL)
	back := time.Now()
	waitFor(t, 3*time.Minute, "the Forgejo issue analysed once its forge answers", func() bool { return analysed(sides["forgejo"]) })
	if health := get(t, "http://"+b.addr+"/readyz"); strings.Contains(health, "unreachable") {
		t.Errorf("/readyz once both forges answer:\n%s", health)
	}
	if metrics := get(t, "http://"+b.addr+"/metrics"); seriesValue(metrics, `alfred_forge_up{forge="forgejo"}`) != 1 {
		t.Errorf("the metrics once the Forgejo answers:\n%s", grepLines(metrics, "alfred_forge_"))
	}
	t.Logf("two real forges: wall time %s; the Forgejo issue analysed %s after its forge answered",
		time.Since(started).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}

// syncDirect syncs the labels of w's project with the forge's own address
// (the bot's configuration names one that does not answer yet).
func syncDirect(t *testing.T, b *bot, w *giteaWorld) {
	t.Helper()
	cmd := exec.Command(b.bin, "labels", "sync", "-project", w.project())
	for _, kv := range b.env {
		if !strings.HasPrefix(kv, "ALFRED_CONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, w.forgeEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "19 labels created") {
		t.Fatalf("labels sync on the %s: %v\n%s", w.in.Title(), err, out)
	}
}

// openLate starts, on addr, a proxy to the forge at target.
func openLate(t *testing.T, addr, target string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("open %s: %v", addr, err)
	}
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(u), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// get answers the body of a GET of u, whatever its status (fetch).
func get(t *testing.T, u string) string {
	t.Helper()
	_, body := fetch(t, u)
	return body
}

// grepLines are the lines of s that start with prefix.
func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
