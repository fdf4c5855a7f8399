package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostPATH is the PATH the host tests give their processes.
const hostPATH = "/usr/local/bin:/usr/bin:/bin"

func newTestHostRunner() *HostRunner {
	return NewHostRunner(HostOptions{KillGrace: 300 * time.Millisecond})
}

// waitGone waits until pid is gone or a zombie, and fails the test otherwise.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// The state follows the command name in parentheses: "pid (comm) S ...".
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d is still alive", pid)
}

// readPid waits for a pid file written by a test process.
func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(file)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %s: %v", file, err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid file %s was not written", file)
	return 0
}

func TestHostRunnerTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	// The child starts a grandchild that ignores SIGTERM, then ignores it too.
	script := `trap '' TERM; (trap '' TERM; sleep 300 & echo $! >"$PIDFILE"; wait) & echo started; wait`
	spec := Spec{
		Argv:    []string{"/bin/sh", "-c", script},
		Env:     map[string]string{"PATH": hostPATH, "PIDFILE": pidFile},
		Timeout: 500 * time.Millisecond,
	}
	res, err := newTestHostRunner().Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Outcome != OutcomeTimeout {
		t.Fatalf("outcome = %s, want %s", res.Outcome, OutcomeTimeout)
	}
	if got := string(res.Stdout); got != "started\n" {
		t.Errorf("stdout so far = %q, want %q", got, "started\n")
	}
	if res.Duration < spec.Timeout {
		t.Errorf("duration %s is shorter than the timeout %s", res.Duration, spec.Timeout)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestHostRunnerKillsLeftoversAfterExit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	// The grandchild keeps stdout open: the run must still end when the child does.
	script := `sleep 300 & echo $! >"$PIDFILE"; exit 4`
	res, err := newTestHostRunner().Run(context.Background(), Spec{
		Argv: []string{"/bin/sh", "-c", script},
		Env:  map[string]string{"PATH": hostPATH, "PIDFILE": pidFile},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Outcome != OutcomeExited || res.ExitCode != 4 {
		t.Fatalf("outcome %s exit %d, want exited 4", res.Outcome, res.ExitCode)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestHostRunnerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := newTestHostRunner().Run(ctx, Spec{Argv: []string{"/bin/sleep", "300"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Outcome != OutcomeCanceled || res.ExitCode != -1 {
		t.Fatalf("outcome %s exit %d, want canceled -1", res.Outcome, res.ExitCode)
	}
}

func TestHostRunnerEnvironmentAllowlist(t *testing.T) {
	t.Setenv("ALFRED_SECRET_PROBE", "leaked")
	res, err := newTestHostRunner().Run(context.Background(), Spec{
		Argv: []string{"/usr/bin/env"},
		Env:  map[string]string{"B": "2", "A": "1 two"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Stdout), "A=1 two\nB=2\n"; got != want {
		t.Fatalf("environment = %q, want exactly %q", got, want)
	}
}

func TestHostRunnerArgvVerbatim(t *testing.T) {
	args := []string{"$(id)", "`id`", "; rm -rf /tmp/x", "a b", "*", "'q'", `"d"`, "$HOME", "|", "&&", ""}
	var stdout bytes.Buffer
	res, err := newTestHostRunner().Run(context.Background(), Spec{
		Argv:   append([]string{"printf", `%s\n`}, args...),
		Env:    map[string]string{"PATH": hostPATH, "HOME": "/nowhere"},
		Stdout: &stdout,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := strings.Join(args, "\n") + "\n"
	if got := string(res.Stdout); got != want {
		t.Fatalf("printf output = %q, want %q", got, want)
	}
	if stdout.String() != want {
		t.Fatalf("streamed stdout = %q, want %q", stdout.String(), want)
	}
}

func TestHostRunnerStreamsAndStdin(t *testing.T) {
	res, err := newTestHostRunner().Run(context.Background(), Spec{
		Argv:  []string{"/bin/sh", "-c", `echo out; echo err >&2; cat; exit 3`},
		Env:   map[string]string{"PATH": hostPATH},
		Stdin: strings.NewReader("from stdin\n"),
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Stdout), "out\nfrom stdin\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := string(res.Stderr), "err\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if res.Outcome != OutcomeExited || res.ExitCode != 3 {
		t.Errorf("outcome %s exit %d, want exited 3", res.Outcome, res.ExitCode)
	}
}

func TestHostRunnerWorkdir(t *testing.T) {
	worktree := t.TempDir()
	if err := os.Mkdir(filepath.Join(worktree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		workdir, want string
	}{
		{"", worktree},
		{"/workspace", worktree},
		{"/workspace/sub", filepath.Join(worktree, "sub")},
	}
	for _, tt := range tests {
		res, err := newTestHostRunner().Run(context.Background(), Spec{
			Argv:     []string{"/bin/pwd"},
			Workdir:  tt.workdir,
			Worktree: &Mount{Host: worktree, Container: WorkspacePath},
		})
		if err != nil {
			t.Fatalf("Run in %q: %v", tt.workdir, err)
		}
		if got := strings.TrimSpace(string(res.Stdout)); got != tt.want {
			t.Errorf("workdir %q: pwd = %q, want %q", tt.workdir, got, tt.want)
		}
	}
}

func TestHostRunnerRefuses(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"session", Spec{Argv: []string{"true"}, Session: &Mount{Host: "/tmp", Container: "/home/agent/.claude/projects"}}, ErrSessionOnHost.Error()},
		{"empty argv", Spec{}, "empty argv"},
		{"workdir outside workspace", Spec{Argv: []string{"true"}, Workdir: "/etc", Worktree: &Mount{Host: "/tmp"}}, "outside /workspace"},
		{"unknown command", Spec{Argv: []string{"no-such-command-alfred"}, Env: map[string]string{"PATH": hostPATH}}, "executable file not found"},
		{"bad env", Spec{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}}, "invalid environment variable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newTestHostRunner().Run(context.Background(), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run error = %v, want one containing %q", err, tt.want)
			}
			if tt.name == "session" && !errors.Is(err, ErrSessionOnHost) {
				t.Fatalf("Run error = %v, want ErrSessionOnHost", err)
			}
		})
	}
}

// TestHostRunnerNoStdinIsEmpty: without Spec.Stdin the process reads an
// empty input (/dev/null), not a closed descriptor a CLI fails on.
func TestHostRunnerNoStdinIsEmpty(t *testing.T) {
	res, err := newTestHostRunner().Run(context.Background(), Spec{
		Argv: []string{"/bin/sh", "-c", `cat; echo "cat exited $?"`},
		Env:  map[string]string{"PATH": hostPATH},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Stdout), "cat exited 0\n"; got != want {
		t.Fatalf("stdout = %q (stderr %q), want %q", got, res.Stderr, want)
	}
}
