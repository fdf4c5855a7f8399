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

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/sandbox"
)

// realCLI is a real CLI pointed at the mock model, as its package's real
// tests point it.
type realCLI struct {
	cli   agents.CLI
	model string
	// env is what the CLI needs beside HOME and PATH to reach the mock at url.
	env func(url string) map[string]string
	// pins are the variables naming the folders of its pinned installs.
	pins []string
}

// realCLIs are the CLIs whose takeover is proven for real. OpenCode is not
// among them: its resume from another folder than the one the session ran
// in hangs (agents/opencode), and the page says to resume it from /workspace.
var realCLIs = []realCLI{
	{cli: claudecode.CLI{}, pins: []string{"ALFRED_AGENT_CLIS_BIN", "ALFRED_AGENT_CLIS_PREVIOUS_BIN"}, env: func(url string) map[string]string {
		return map[string]string{"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test"}
	}},
	{cli: gemini.CLI{}, model: "gemini-2.5-flash", pins: []string{"ALFRED_AGENT_CLIS_BIN"}, env: func(url string) map[string]string {
		return map[string]string{"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "mock-provider-key"}
	}},
}

// TestRealResumesElsewhere: each real CLI (its pins of ALFRED_AGENT_CLIS_BIN
// and ALFRED_AGENT_CLIS_PREVIOUS_BIN) starts a session in a clone of the
// project at a folder named /workspace's way, with the sandbox's home,
// against the mock model; the session folder is exported, the command's
// steps are run in another clone elsewhere (a space and a quote in its
// path) with another home, and the CLI's resume there, with the adapter's
// own argv, loads the earlier history. Claude Code 2.1.197 and Gemini bind
// sessions to the folder they ran in: unpacked plainly, they find none.
func TestRealResumesElsewhere(t *testing.T) {
	for _, c := range realCLIs {
		d := c.cli.Descriptor()
		for _, pin := range c.pins {
			t.Run(d.ID+"/"+pin, func(t *testing.T) {
				bin := os.Getenv(pin)
				if _, err := os.Stat(filepath.Join(bin, d.Executable)); bin == "" || err != nil {
					if testing.Short() {
						t.Skipf("%s has no %s: run scripts/agent-clis.sh", pin, d.Executable)
					}
					t.Fatalf("%s=%q has no %s (run scripts/agent-clis.sh): %v", pin, bin, d.Executable, err)
				}
				c.resumesElsewhere(t, bin)
			})
		}
	}
}

// resumesElsewhere is the test with the CLI of bin.
func (c realCLI) resumesElsewhere(t *testing.T, bin string) {
	mock := mockllm.Start(mockllm.Options{})
	t.Cleanup(mock.Close)
	d := c.cli.Descriptor()
	id := d.NewSessionID()
	run := func(home, dir, prompt string, mode agents.Mode) {
		t.Helper()
		env := map[string]string{"HOME": home, "PATH": bin + ":/usr/bin:/bin", "TERM": "dumb", "LANG": "C.UTF-8"}
		maps.Copy(env, c.env(mock.URL))
		if h, ok := c.cli.(agents.HomeConfigurer); ok {
			for p, body := range h.HomeFiles(env) {
				write(t, home, strings.TrimPrefix(p, agents.AgentHome+"/"), body)
			}
		}
		maps.Copy(env, d.FixedEnv)
		argv := c.cli.Argv(agents.Invocation{Mode: mode, Prompt: prompt, Phase: agents.PhaseAnswer, Model: c.model,
			SessionID: id, SessionName: mailbox.BranchName, Env: env})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, argv[0]), argv[1:]...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(prompt)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out := c.cli.Parse(&sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()})
		if err != nil || !out.Succeeded {
			t.Fatalf("%s %s in %s: %v %q\n%s\n%s", d.Executable, mode, dir, err, out.Text, stdout.String(), stderr.String())
		}
		if mode == agents.ModeFresh && id == "" {
			id = out.NativeSessionID
		}
	}

	// The bot's run: the sandbox's home and /workspace, played by folders,
	// /workspace a clone of the project as the agent gets it.
	work := t.TempDir()
	remote := gitRemote(t, work, mailbox.BranchName)
	sandboxHome, sandboxDir := t.TempDir(), filepath.Join(t.TempDir(), "workspace")
	sh(t, work, sandboxHome, "git clone --quiet --branch "+shellQuote(mailbox.BranchName)+" "+shellQuote(remote)+" "+shellQuote(sandboxDir))
	run(sandboxHome, sandboxDir, "first question", agents.ModeFresh)
	first := len(mock.Requests())
	base := t.TempDir()
	folder, err := botrun.SessionStore{Base: base}.Ensure(mailbox, d.ID, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := homePath(d.SessionStatePath)
	sh(t, sandboxHome, sandboxHome, "cp -R "+shellQuote(rel)+"/. "+shellQuote(folder))

	// The person: a clone of the project elsewhere, another home.
	home := t.TempDir()
	clone := filepath.Join(work, "alice's demo")
	sh(t, work, home, "git clone --quiet "+shellQuote(remote)+" "+shellQuote(clone))
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
	run(home, clone, "second question", agents.ModeResume)

	reqs := mock.Requests()
	last := reqs[len(reqs)-1]
	if last.Messages <= reqs[first-1].Messages || !strings.Contains(strings.Join(last.UserTexts, "\n"), "first question") {
		t.Errorf("the resume elsewhere did not load the session: %d messages (the first run's last request had %d), user texts %q",
			last.Messages, reqs[first-1].Messages, last.UserTexts)
	}
}
