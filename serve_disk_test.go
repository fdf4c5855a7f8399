package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/state"
)

// smallDisk mounts a tmpfs of size on a new folder for the test. It needs
// root (make test runs as root in CI); without it the test fails, and skips
// only under -short, as the other tests that need the test machine do.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	why := "this test fills a " + size + " tmpfs, which only root may mount"
	if os.Geteuid() != 0 {
		if testing.Short() {
			t.Skipf("not root (%s)", why)
		}
		t.Fatalf("not root: %s; run the tests as root (make test does in CI)", why)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %s tmpfs on %s: %v\n%s (%s)", size, dir, err, out, why)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// served is an `alfred serve` process and its log.
type served struct {
	cmd  *exec.Cmd
	addr string
	log  string // path of its stderr (JSON lines)
}

// serveAlfred starts `alfred serve` with env (PATH and HOME added) and
// waits until it serves HTTP.
func serveAlfred(t *testing.T, bin string, env map[string]string) *served {
	t.Helper()
	s := &served{addr: freePort(t), log: filepath.Join(t.TempDir(), "alfred.log")}
	s.cmd = exec.Command(bin, "serve", "-listen", s.addr, "-log-format", "json")
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		s.cmd.Env = append(s.cmd.Env, k+"="+v)
	}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		s.cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("alfred's log (last 8 KiB):\n%s", b[max(0, len(b)-8192):])
		}
	})
	waitUntil(t, 30*time.Second, "alfred serve answers", func() bool { code, _ := s.get("/healthz"); return code == 200 })
	return s
}

func (s *served) get(path string) (int, string) {
	resp, err := http.Get("http://" + s.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// problemLines counts the WARN and ERROR lines of the log, by message.
func (s *served) problemLines() map[string]int {
	raw, _ := os.ReadFile(s.log)
	out := map[string]int{}
	for _, l := range strings.Split(string(raw), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(l), &rec) == nil && (rec.Level == "WARN" || rec.Level == "ERROR") {
			out[rec.Level+" "+rec.Msg]++
		}
	}
	return out
}

// logField is field of the first log line whose message is msg.
func (s *served) logField(msg, field string) any {
	raw, _ := os.ReadFile(s.log)
	for _, l := range strings.Split(string(raw), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg {
			return rec[field]
		}
	}
	return nil
}

// logLines counts the lines of the log at level whose message holds msg.
func (s *served) logLines(level, msg string) int {
	raw, _ := os.ReadFile(s.log)
	n := 0
	for _, l := range strings.Split(string(raw), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Level == level && strings.Contains(rec.Msg, msg) {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}

// hooks posts signed Forgejo deliveries of one issue comment (the bot's
// own, which the engine records and otherwise ignores) and keeps which
// were accepted.
type hooks struct {
	url, secret string
	body        []byte
	client      *http.Client

	mu       sync.Mutex
	accepted map[string]bool
	refused  int
}

func newHooks(t *testing.T, s *served, secret string) *hooks {
	body, err := os.ReadFile("testdata/forgejo/forgejo-7.0.16-api/hook-issue_comment-created.json")
	if err != nil {
		t.Fatal(err)
	}
	return &hooks{url: "http://" + s.addr + "/webhooks/forgejo", secret: secret, body: body, accepted: map[string]bool{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// post sends delivery and returns the answer's status (0: no answer).
func (h *hooks) post(delivery string) int {
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(h.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forgejo-Event", "issue_comment")
	req.Header.Set("X-Forgejo-Event-Type", "issue_comment")
	req.Header.Set("X-Forgejo-Delivery", delivery)
	req.Header.Set("X-Forgejo-Signature", forges.SignHMACSHA256(h.secret, h.body))
	resp, err := h.client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if resp.StatusCode == http.StatusAccepted {
		h.accepted[delivery] = true
	} else {
		h.refused++
	}
	return resp.StatusCode
}

// paced posts n deliveries named prefix-i at rate per second; during is
// called after each (it may look at the server meanwhile).
func (h *hooks) paced(prefix string, n, rate int, during func(i int)) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range n {
		<-tick.C
		wg.Add(1)
		go func() { defer wg.Done(); h.post(fmt.Sprintf("%s-%d", prefix, i)) }()
		if during != nil {
			during(i)
		}
	}
	wg.Wait()
}

// recorded reads the delivery ids of the event records in the state
// branch, with how many records each has.
func recorded(t *testing.T, dir string) map[string]int {
	t.Helper()
	st, err := state.Open(context.Background(), dir, state.Options{ReadOnly: true})
	if err != nil {
		return nil // a pack merged away while opening: the caller asks again
	}
	defer st.Close()
	out := map[string]int{}
	for _, p := range st.List("events") {
		raw, err := st.Get(p)
		var rec struct {
			Delivery string `json:"delivery_id"`
			Done     bool   `json:"done"`
		}
		if err != nil || json.Unmarshal(raw, &rec) != nil || !rec.Done {
			t.Fatalf("event record %s: %v", p, err)
		}
		out[rec.Delivery]++
	}
	return out
}

// TestAFullDisk is issue 18's try of a full disk, as a new user would: the
// state and data folders on a 4 MiB file system, 4000 signed webhooks at
// 200/s (6 MiB until the state journal: its folds store the same records
// in fewer, larger packs, and 4000 webhooks no longer fill 6 MiB). Nothing accepted is lost, /readyz answers 503 with the reason
// while writes fail, the log says so once rather than at every try, and
// once space comes back every accepted event is recorded exactly once and
// new webhooks are taken again.
func TestAFullDisk(t *testing.T) {
	disk := smallDisk(t, "4m")
	const secret = "s3cret-hooks"
	s, stateDir := serveOnDisk(t, disk, secret)
	h := newHooks(t, s, secret)
	notReady := fill(t, s, h)
	if !strings.Contains(notReady, "no space left on device") {
		t.Fatalf("/readyz while full does not say why: %q", notReady)
	}
	if _, home := s.get("/"); !strings.Contains(home, `data-test="not-ready"`) {
		t.Fatalf("the home page does not show that writes fail")
	}
	if _, metrics := s.get("/metrics"); !strings.Contains(metrics, "alfred_state_writable 0") {
		t.Fatalf("/metrics does not show that writes fail")
	}

	// Space comes back.
	if out, err := exec.Command("mount", "-o", "remount,size=64m", disk).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v\n%s", err, out)
	}
	back := time.Now()
	waitUntil(t, 30*time.Second, "ready again", func() bool { code, _ := s.get("/readyz"); return code == 200 })
	t.Logf("ready again %s after space came back", time.Since(back).Round(time.Millisecond))
	h.paced("after", 200, 200, nil)
	waitUntil(t, 60*time.Second, "every accepted event recorded", func() bool { return len(recorded(t, stateDir)) >= len(h.accepted) })
	rec := recorded(t, stateDir)
	for d := range h.accepted {
		if rec[d] != 1 {
			t.Errorf("accepted delivery %s recorded %d times, want 1", d, rec[d])
		}
	}
	if len(rec) != len(h.accepted) {
		t.Errorf("%d deliveries recorded, %d accepted: a refused one was recorded", len(rec), len(h.accepted))
	}
	// Once per change: a line when recording starts failing, one when it
	// works again (the disk may take a few writes in between, as the
	// journal empties), never one per try. Recording may also never fail:
	// when the intake's journal is the first write to find the disk full,
	// the webhooks are refused (500) and the handled events already taken
	// fit in the state journal's preallocated file (seen once in a loaded
	// run: 2,631 accepted, 1,369 refused, no recording failed).
	fails, backs := s.logLines("ERROR", "recording handled events fails"), s.logLines("INFO", "handled events recorded again")
	if fails > 3 || backs != fails {
		t.Errorf("%d lines saying recording fails and %d saying it works again: want one each per outage", fails, backs)
	}
	if fails == 0 {
		t.Logf("recording handled events never failed in this outage: the intake found the disk full first")
	}
}

// serveOnDisk serves the bot with its state and data folders on disk, its
// forge the Forgejo fake, and waits until it is ready.
func serveOnDisk(t *testing.T, disk, secret string) (*served, string) {
	t.Helper()
	fj := forgejotest.NewServer(t)
	stateDir, dataDir := filepath.Join(disk, "state.git"), filepath.Join(disk, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := serveAlfred(t, buildBinary(t), map[string]string{
		"ALFRED_STATE_DIR": stateDir, "ALFRED_DATA_DIR": dataDir,
		"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": fj.URL(), "ALFRED_FORGE_TOKEN": forgejotest.BotToken,
		"ALFRED_WEBHOOK_SECRETS": secret, "ALFRED_RUNNER": "host", "ALFRED_POLL_INTERVAL": "1h",
	})
	waitUntil(t, 30*time.Second, "ready", func() bool { code, _ := s.get("/readyz"); return code == 200 })
	return s, stateDir
}

// fill posts 4000 deliveries at 200/s, which fill the disk, and returns
// what /readyz answered while it was full.
func fill(t *testing.T, s *served, h *hooks) string {
	t.Helper()
	var full time.Time
	var notReady string
	look := func() {
		if notReady != "" {
			return
		}
		if code, body := s.get("/readyz"); code == http.StatusServiceUnavailable {
			notReady = body
		}
	}
	h.paced("full", 4000, 200, func(int) {
		if h.refusedNow() > 0 {
			if full.IsZero() {
				full = time.Now()
			}
			look()
		}
	})
	if full.IsZero() {
		t.Fatalf("the 4 MiB disk never filled: %d accepted", len(h.accepted))
	}
	waitUntil(t, 10*time.Second, "/readyz to answer 503 while the disk is full", func() bool { look(); return notReady != "" })
	t.Logf("disk full after %d accepted; %d refused (500); over %s full, WARN and ERROR lines by message: %v",
		len(h.accepted), h.refused, time.Since(full).Round(time.Second), s.problemLines())
	return notReady
}

// refusedNow is how many deliveries were refused so far.
func (h *hooks) refusedNow() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}
