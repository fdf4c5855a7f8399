package mirror

import (
	"context"
	"errors"
	"fmt"
	"github.com/alchemic-studio/alfred/internal/logtest"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/state"
)

// running starts a mirror of dir to r after Prepare, with short backoffs,
// logging into sink; the store's commits notify it.
func running(t *testing.T, dir string, r Remote, sink *logtest.Book) (*Mirror, *state.Store) {
	t.Helper()
	log := slog.New(sink)
	start, err := Prepare(context.Background(), dir, r, log)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Dir: dir, Remote: r, Start: start, Logger: log, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Timeout: 20 * time.Second})
	st := store(t, dir, m.Notify)
	m.Start()
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, st
}

// eventually waits up to 20s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestPushAfterWrites(t *testing.T) {
	g := newGitServer(t)
	bare, r := g.repo(t, "alfred-state")
	dir := filepath.Join(t.TempDir(), "state.git")
	sink := &logtest.Book{}
	m, st := running(t, dir, r, sink)

	var lat []time.Duration
	for i := range 20 {
		put(t, st, i)
		t0 := time.Now()
		eventually(t, "the push of commit "+st.Tip(), func() bool { return tipOf(bare) == st.Tip() })
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	t.Logf("push latency after a commit: median %s, max %s", lat[len(lat)/2], lat[len(lat)-1])

	// A burst: the notices fold into few pushes, and the remote catches up.
	for i := 20; i < 120; i++ {
		put(t, st, i)
	}
	eventually(t, "the burst pushed", func() bool { return tipOf(bare) == st.Tip() })
	eventually(t, "the mirror knows", func() bool { s := m.Status(); return s.Behind == 0 && s.Err == nil && s.RemoteTip == st.Tip() })
	gitT(t, bare, "fsck", "--strict", "--no-progress")
	if n := gitT(t, bare, "rev-list", "--count", branch); n != "120" {
		t.Fatalf("remote has %s commits, want 120", n)
	}
	if pushed := lastPushed(dir, r); pushed != st.Tip() {
		t.Fatalf("recorded push %q, want %s", pushed, st.Tip())
	}
	if sink.Count(slog.LevelWarn, "") != 0 {
		t.Fatalf("warnings while all went well:\n%s", sink.Text())
	}
}

// pushedState mirrors a state of 500 records and 31 commits to r.
func pushedState(t *testing.T, bare string, r Remote) *state.Store {
	t.Helper()
	_, st := running(t, filepath.Join(t.TempDir(), "state.git"), r, &logtest.Book{})
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		for i := range 500 {
			if err := tx.Put(fmt.Sprintf("notes/%04d.json", i), map[string]any{"format_version": 1, "n": i}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		put(t, st, i)
	}
	eventually(t, "the state pushed", func() bool { return tipOf(bare) == st.Tip() })
	return st
}

func TestRestoreOnAFreshDirectory(t *testing.T) {
	g := newGitServer(t)
	bare, r := g.repo(t, "alfred-state")
	st := pushedState(t, bare, r)

	for _, tt := range []struct {
		name string
		make func(dir string)
	}{
		{"missing", func(string) {}},
		{"empty folder", func(dir string) { os.MkdirAll(dir, 0o755) }},
		{"fresh repository", func(dir string) {
			s, err := state.Open(context.Background(), dir, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state.git")
			tt.make(dir)
			start, err := Prepare(context.Background(), dir, r, quiet())
			if err != nil || !start.Restored || start.RemoteTip != st.Tip() {
				t.Fatalf("prepare: %+v %v", start, err)
			}
			t.Logf("restore of 500 records and 31 commits: %s", start.Took)
			got, err := state.Open(context.Background(), dir, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			if got.Tip() != st.Tip() || got.Len() != st.Len() {
				t.Fatalf("restored tip %s with %d records, want %s with %d", got.Tip(), got.Len(), st.Tip(), st.Len())
			}
			a, _ := got.Get("notes/0499.json")
			b, _ := st.Get("notes/0499.json")
			if string(a) != string(b) {
				t.Fatalf("restored record %q, want %q", a, b)
			}
			// The restored store writes, and its mirror pushes on top.
			if err := got.Update(context.Background(), func(tx *state.Tx) error {
				return tx.Put("notes/after.json", map[string]any{"format_version": 1})
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := git(context.Background(), Remote{}, dir, nil, "merge-base", "--is-ancestor", st.Tip(), got.Tip()); err != nil {
				t.Fatalf("the restored branch does not continue the remote's: %v", err)
			}
		})
	}
}

func TestARemoteThatRejects(t *testing.T) {
	g := newGitServer(t)
	bare, r := g.repo(t, "alfred-state")
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'quota exceeded' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state.git")
	sink := &logtest.Book{}
	m, st := running(t, dir, r, sink)
	for i := range 10 {
		t0 := time.Now()
		put(t, st, i)
		if took := time.Since(t0); took > time.Second {
			t.Fatalf("a commit took %s while pushes fail: the mirror blocks writes", took)
		}
	}
	eventually(t, "failures noticed", func() bool { return m.Status().Failures >= 4 })
	s := m.Status()
	if s.Behind != 10 || s.Err == nil || !strings.Contains(s.Err.Error(), "pre-receive hook declined") || tipOf(bare) != "" {
		t.Fatalf("status while the remote rejects: behind %d, err %v, remote %q", s.Behind, s.Err, tipOf(bare))
	}
	if !s.NextTry.After(s.FailingSince) {
		t.Fatalf("no next try: %+v", s)
	}
	if n := sink.Count(slog.LevelWarn, "state mirror push failed"); n != 1 {
		t.Fatalf("%d warnings for %d failures, want 1 (once per change):\n%s", n, s.Failures, sink.Text())
	}
	os.Remove(hook)
	eventually(t, "the push once the remote accepts", func() bool { return tipOf(bare) == st.Tip() })
	eventually(t, "caught up", func() bool { s := m.Status(); return s.Err == nil && s.Behind == 0 })
	if n := sink.Count(slog.LevelInfo, "state mirror pushes again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1:\n%s", n, sink.Text())
	}
}

func TestARemoteThatIsAhead(t *testing.T) {
	g := newGitServer(t)
	bare, r := g.repo(t, "alfred-state")
	dirA := filepath.Join(t.TempDir(), "a", "state.git")
	mA, stA := running(t, dirA, r, &logtest.Book{})
	put(t, stA, 1)
	eventually(t, "A pushed", func() bool { return tipOf(bare) == stA.Tip() })

	// Another process restores the remote elsewhere and writes there.
	dirB := filepath.Join(t.TempDir(), "b", "state.git")
	mB, stB := running(t, dirB, r, &logtest.Book{})
	put(t, stB, 2)
	eventually(t, "B pushed", func() bool { return tipOf(bare) == stB.Tip() })
	mB.Close(context.Background())

	// A, still running, writes: its push is refused, the remote keeps B's commit.
	put(t, stA, 3)
	eventually(t, "A's push refused", func() bool { return mA.Status().Err != nil })
	if err := mA.Status().Err; !errors.Is(err, ErrRemoteAhead) {
		t.Fatalf("A's error %v does not wrap ErrRemoteAhead", err)
	}
	if tipOf(bare) != stB.Tip() {
		t.Fatal("A overwrote B's commit")
	}
	mA.Close(context.Background())
	stA.Close()

	// A starts again: it refuses, and says how to resolve it.
	_, err := Prepare(context.Background(), dirA, r, quiet())
	if !errors.Is(err, ErrRemoteAhead) {
		t.Fatalf("prepare with the remote ahead: %v", err)
	}
	for _, want := range []string{"another process wrote there", "move " + dirA + " aside", "push --force", r.URL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), testToken) {
		t.Fatalf("the refusal shows the token: %v", err)
	}
}

func TestANetworkCutInTheMiddleOfAPush(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer bool
	}{{"while the pack uploads", false}, {"while the answer comes back", true}} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGitServer(t)
			bare, r := g.repo(t, "alfred-state")
			proxy := newCutProxy(t, strings.TrimPrefix(g.srv.URL, "http://"), tt.answer)
			r.URL = proxy.url(r.URL)
			dir := filepath.Join(t.TempDir(), "state.git")
			sink := &logtest.Book{}
			m, st := running(t, dir, r, sink)
			put(t, st, 1)
			eventually(t, "the first push", func() bool { return m.Status().RemoteTip == st.Tip() })

			proxy.armed.Store(true)
			for i := 2; i < 40; i++ {
				put(t, st, i)
			}
			eventually(t, "the cut", func() bool { return proxy.cuts.Load() == 1 })
			eventually(t, "caught up after the cut", func() bool { s := m.Status(); return s.Err == nil && s.Behind == 0 && s.RemoteTip == st.Tip() })
			if tipOf(bare) != st.Tip() {
				t.Fatalf("remote at %s, want %s", tipOf(bare), st.Tip())
			}
			gitT(t, bare, "fsck", "--strict", "--no-progress")
			if sink.Count(slog.LevelWarn, "state mirror push failed") != 1 || sink.Count(slog.LevelInfo, "pushes again") != 1 {
				t.Fatalf("want one failure and one recovery line:\n%s", sink.Text())
			}
		})
	}
}

func TestAgainstTheForgejoFake(t *testing.T) {
	fj := forgejotest.NewServer(t)
	bare := filepath.Join(t.TempDir(), "alfred-state.git")
	gitT(t, "", "init", "--quiet", "--bare", bare)
	if err := fj.ServeGit(bare); err != nil {
		t.Fatal(err)
	}
	// The bot's token comes with the remote, as serve passes the forge's.
	r, err := ParseRemote(fj.CloneURL(), forgejotest.Bot, forgejotest.BotToken)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state.git")
	_, st := running(t, dir, r, &logtest.Book{})
	for i := range 5 {
		put(t, st, i)
	}
	eventually(t, "the push to the fake", func() bool { return tipOf(bare) == st.Tip() })

	fresh := filepath.Join(t.TempDir(), "state.git")
	start, err := Prepare(context.Background(), fresh, r, quiet())
	if err != nil || !start.Restored || tipOf(fresh) != st.Tip() {
		t.Fatalf("restore from the fake: %+v %v", start, err)
	}

	// A wrong token: the push fails, and no message shows the token.
	wrong := r
	wrong.Password = "wrong-token-4242"
	sink := &logtest.Book{}
	m, st2 := running(t, fresh, wrong, sink)
	put(t, st2, 99)
	eventually(t, "the refusal", func() bool { return m.Status().Err != nil })
	if err := m.Status().Err; strings.Contains(err.Error(), "wrong-token-4242") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("push with a wrong token: %v", err)
	}
	if strings.Contains(sink.Text(), "wrong-token-4242") || tipOf(bare) != st.Tip() {
		t.Fatalf("the log shows the token, or the push went through:\n%s", sink.Text())
	}
}

func TestParseRemoteKeepsCredentialsOutOfTheURL(t *testing.T) {
	for _, tt := range []struct {
		raw, user, pass       string
		url, wantUser, wantPw string
	}{
		{"https://bot:tok@forge.example/alfred/state.git", "x", "y", "https://forge.example/alfred/state.git", "bot", "tok"},
		{"https://forge.example/alfred/state.git", "bot", "forge-token", "https://forge.example/alfred/state.git", "bot", "forge-token"},
		{"https://oauth2@gitlab.example/a/s.git", "bot", "forge-token", "https://gitlab.example/a/s.git", "oauth2", "forge-token"},
		{"git@forge.example:alfred/state.git", "bot", "forge-token", "git@forge.example:alfred/state.git", "", ""},
		{"/srv/backup/state.git", "bot", "forge-token", "/srv/backup/state.git", "", ""},
	} {
		r, err := ParseRemote(tt.raw, tt.user, tt.pass)
		if err != nil || r.URL != tt.url || r.Username != tt.wantUser || r.Password != tt.wantPw {
			t.Errorf("ParseRemote(%q) = %+v, %v", tt.raw, r, err)
		}
	}
	if got := Redact("https://bot:tok@forge.example/s.git"); got != "https://forge.example/s.git" {
		t.Errorf("Redact = %q", got)
	}
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {5, 16 * time.Second}, {9, 256 * time.Second}, {10, 5 * time.Minute}, {40, 5 * time.Minute}} {
		for range 20 {
			d := backoff(time.Second, 5*time.Minute, tt.failures)
			if d < tt.want*8/10 || d > tt.want*12/10 {
				t.Fatalf("backoff after %d failures = %s, want %s ±20%%", tt.failures, d, tt.want)
			}
		}
	}
}

func TestCloseMakesALastPush(t *testing.T) {
	g := newGitServer(t)
	bare, r := g.repo(t, "alfred-state")
	dir := filepath.Join(t.TempDir(), "state.git")
	start, err := Prepare(context.Background(), dir, r, quiet())
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Dir: dir, Remote: r, Start: start, Logger: quiet()})
	st := store(t, dir, nil) // commits the mirror is not told of, as at shutdown
	m.Start()
	for i := range 3 {
		put(t, st, i)
	}
	st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if tipOf(bare) != st.Tip() {
		t.Fatalf("remote at %q after Close, want %s", tipOf(bare), st.Tip())
	}
	if err := m.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
