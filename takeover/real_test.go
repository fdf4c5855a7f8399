package takeover

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	botrun "github.com/alchemic-studio/alfred/bot/run"
)

// TestRealClaudeResumesElsewhere: the real Claude Code (the pinned one of
// ALFRED_AGENT_CLIS_BIN, and the previous pin, whose sessions are bound to
// the folder they ran in) starts a session in a folder named as the
// sandbox's (/workspace's slug differs from a person's), against the mock
// model; the session folder is exported, and the command's steps, run in a
// clone elsewhere with another home, put it where that CLI finds it: its
// resume there, with the adapter's own argv, loads the earlier history.
func TestRealClaudeResumesElsewhere(t *testing.T) {
	for _, pin := range []struct{ name, env, script string }{
		{"current", "ALFRED_AGENT_CLIS_BIN", "scripts/agent-clis.sh"},
		{"previous", "ALFRED_AGENT_CLIS_PREVIOUS_BIN", "scripts/agent-clis.sh --previous"},
	} {
		t.Run(pin.name, func(t *testing.T) {
			bin := os.Getenv(pin.env)
			if _, err := os.Stat(filepath.Join(bin, claudecode.Executable)); bin == "" || err != nil {
				if testing.Short() {
					t.Skipf("%s has no claude: run %s", pin.env, pin.script)
				}
				t.Fatalf("%s=%q has no claude (run %s): %v", pin.env, bin, pin.script, err)
			}
			resumesElsewhere(t, bin)
		})
	}
}

// resumesElsewhere is the test with the claude of bin.
func resumesElsewhere(t *testing.T, bin string) {
	mock := mockllm.Start(mockllm.Options{})
	t.Cleanup(mock.Close)
	l, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	d := l.Descriptor()
	id := uuid.NewString()
	claude := func(home, dir, prompt string, mode agents.Mode) {
		t.Helper()
		argv := claudecode.CLI{}.Argv(agents.Invocation{Mode: mode, Prompt: prompt, Phase: agents.PhaseAnswer, SessionID: id, SessionName: mailbox.BranchName})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, argv[0]), argv[1:]...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(prompt)
		env := map[string]string{"HOME": home, "PATH": bin + ":/usr/bin:/bin", "TERM": "dumb", "LANG": "C.UTF-8",
			"ANTHROPIC_BASE_URL": mock.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
		maps.Copy(env, d.FixedEnv)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude %s in %s: %v\n%s", mode, dir, err, out)
		}
	}

	// The bot's run: the sandbox's home and /workspace, played by folders.
	sandboxHome, sandboxDir := t.TempDir(), filepath.Join(t.TempDir(), "workspace")
	if err := os.MkdirAll(sandboxDir, 0o700); err != nil {
		t.Fatal(err)
	}
	claude(sandboxHome, sandboxDir, "first question", agents.ModeFresh)
	first := len(mock.Requests())
	base := t.TempDir()
	folder, err := botrun.SessionStore{Base: base}.Ensure(mailbox, d.ID, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	sh(t, sandboxHome, sandboxHome, "cp -R .claude/projects/. "+shellQuote(folder))

	// The person: a clone of the project elsewhere, another home.
	home, work := t.TempDir(), t.TempDir()
	clone := filepath.Join(work, "alice's demo")
	sh(t, work, home, "git clone --quiet "+shellQuote(gitRemote(t, work, mailbox.BranchName))+" "+shellQuote(clone))
	s := Session{Mailbox: mailbox, Descriptor: d, NativeID: id}
	var buf bytes.Buffer
	if _, err := (Exporter{Sessions: botrun.SessionStore{Base: base}}).Write(context.Background(), &buf, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, FileName(s)), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	command, err := Command(s, FileName(s))
	if err != nil {
		t.Fatal(err)
	}
	steps := strings.Split(command, " && ")
	sh(t, clone, home, strings.Join(steps[:len(steps)-1], " && "))
	claude(home, clone, "second question", agents.ModeResume)

	reqs := mock.Requests()
	last := reqs[len(reqs)-1]
	if last.Messages <= reqs[first-1].Messages || !strings.Contains(strings.Join(last.UserTexts, "\n"), "first question") {
		t.Errorf("the resume elsewhere did not load the session: %d messages (the first run's last request had %d), user texts %q",
			last.Messages, reqs[first-1].Messages, last.UserTexts)
	}
}
