package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// HostOptions tune the host runner.
type HostOptions struct {
	// Timeout applies when a Spec has none; 0 means DefaultTimeout.
	Timeout time.Duration
	// KillGrace is how long the process group has between SIGTERM and SIGKILL
	// at the timeout or a cancel; 0 means DefaultKillGrace.
	KillGrace time.Duration
}

// HostRunner runs a Spec as a plain process of the bot's own user, for
// installations without Docker.
//
// It honours Argv (run directly, never through a shell), Env (the whole
// environment: nothing of the bot's own leaks), Stdin/Stdout/Stderr and
// Timeout. The process leads its own process group; at the timeout, on a
// cancel, and after it exits, the whole group is killed, so no child or
// grandchild outlives the run. The working directory is Worktree.Host (with
// Workdir's part under /workspace appended) when a Worktree is set, else
// Workdir as a host path, else the bot's own.
//
// A host process sees the host's files: a read-only Worktree is not enforced,
// and Image, UID/GID, Credentials, Tmpfs, Network, the resource limits and
// Labels (which describe a container) are ignored. A Spec with a Session is
// refused with ErrSessionOnHost: the host runner never resumes. A Spec with
// Binds or a Prefix is refused with ErrBindsOnHost.
type HostRunner struct {
	opts    HostOptions
	running atomic.Int64 // processes started and not yet reaped
}

// NewHostRunner returns a host runner.
func NewHostRunner(opts HostOptions) *HostRunner {
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	return &HostRunner{opts: opts}
}

// Name returns "host".
func (r *HostRunner) Name() string { return "host" }

// Running returns how many processes Run started and has not reaped yet.
func (r *HostRunner) Running() int { return int(r.running.Load()) }

// Run starts the process and waits for its end, its timeout or ctx.
func (r *HostRunner) Run(ctx context.Context, spec Spec) (*Result, error) {
	cmd, err := hostCommand(&spec)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: before start: %w", err)
	}
	p, err := newHostPipes(spec.Stdin != nil)
	if err != nil {
		return nil, err
	}
	defer p.closeAll()
	cmd.Stdout, cmd.Stderr = p.stdoutW, p.stderrW
	if p.stdinR != nil { // a nil *os.File would close fd 0; no Stdin is /dev/null
		cmd.Stdin = p.stdinR
	}
	stdout, stderr := NewCapture(spec.Stdout), NewCapture(spec.Stderr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: start %q: %w", spec.Argv[0], err)
	}
	started := time.Now()
	r.running.Add(1)
	p.closeChildEnds()
	copied := p.copy(spec.Stdin, stdout, stderr)

	outcome := r.endGroup(ctx, cmd.Process.Pid, timeoutOf(&spec, r.opts.Timeout))
	err = cmd.Wait()
	r.running.Add(-1)
	if err != nil && cmd.ProcessState == nil {
		return nil, fmt.Errorf("sandbox: wait for %q: %w", spec.Argv[0], err)
	}
	p.drain(copied, r.opts.KillGrace)

	res := &Result{
		Outcome:  outcome,
		ExitCode: -1,
		Stdout:   stdout.Bytes(),
		Stderr:   stderr.Bytes(),
		Started:  started,
		Duration: time.Since(started),
	}
	if outcome == OutcomeExited {
		res.ExitCode = exitCode(cmd.ProcessState)
	}
	return res, nil
}

// hostCommand checks that the host runner can run spec and returns its
// command, without its standard streams: the program found in the Spec's
// PATH, its environment, its working directory, and a process group of its
// own that dies with the bot.
func hostCommand(spec *Spec) (*exec.Cmd, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	if spec.Session != nil {
		return nil, ErrSessionOnHost
	}
	if len(spec.Binds) > 0 || len(spec.Prefix) > 0 {
		return nil, ErrBindsOnHost
	}
	dir, err := hostDir(spec)
	if err != nil {
		return nil, err
	}
	bin, err := lookPath(spec.Argv[0], spec.Env["PATH"])
	if err != nil {
		return nil, fmt.Errorf("sandbox: find %q: %w", spec.Argv[0], err)
	}
	return &exec.Cmd{
		Path: bin,
		Args: spec.Argv,
		Env:  envList(spec.Env),
		Dir:  dir,
		// Its own process group, to stop all of it; and killed with the
		// bot, should the bot die without stopping it (SIGKILL, OOM).
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}, nil
}

// endGroup waits for the exit of the process leading the group pgid, its
// timeout or ctx, and returns how the run ended. At the timeout or on ctx
// the group gets SIGTERM, then SIGKILL after the grace period; whatever the
// leader left behind is killed too. The leader is left for the caller to reap.
func (r *HostRunner) endGroup(ctx context.Context, pgid int, timeout time.Duration) Outcome {
	exited := make(chan struct{})
	go func() {
		waitExited(pgid)
		close(exited)
	}()

	outcome := OutcomeExited
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		outcome = OutcomeTimeout
	case <-ctx.Done():
		outcome = OutcomeCanceled
	}
	if outcome != OutcomeExited {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(r.opts.KillGrace):
		}
	}
	// The leader has exited (or is being killed): whatever it left in its
	// group goes too, before the leader is reaped so the group id is still ours.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	return outcome
}

// waitExited blocks until the process pid has exited, without reaping it.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// exitCode is the process's exit status, or 128+signal when a signal ended it.
func exitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

// hostDir maps the Spec's working directory to the host.
func hostDir(spec *Spec) (string, error) {
	if spec.Worktree != nil {
		if !filepath.IsAbs(spec.Worktree.Host) {
			return "", fmt.Errorf("sandbox: worktree host path %q is not absolute", spec.Worktree.Host)
		}
		wd := path.Clean(spec.Workdir)
		if spec.Workdir == "" || wd == WorkspacePath {
			return spec.Worktree.Host, nil
		}
		if !isUnder(wd, WorkspacePath) {
			return "", fmt.Errorf("sandbox: workdir %q is outside %s", spec.Workdir, WorkspacePath)
		}
		return filepath.Join(spec.Worktree.Host, filepath.FromSlash(strings.TrimPrefix(wd, WorkspacePath+"/"))), nil
	}
	if spec.Workdir != "" && !filepath.IsAbs(spec.Workdir) {
		return "", fmt.Errorf("sandbox: workdir %q is not absolute", spec.Workdir)
	}
	return spec.Workdir, nil
}

// lookPath finds name in the Spec's PATH when it has one, else in the bot's.
func lookPath(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") || pathEnv == "" {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w in the spec's PATH", exec.ErrNotFound)
}

// hostPipes are the process's standard streams as plain pipes, so that
// waiting for the process never waits for the copies.
type hostPipes struct {
	stdinR, stdinW   *os.File
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File
}

func newHostPipes(withStdin bool) (*hostPipes, error) {
	p := &hostPipes{}
	var err error
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	if withStdin {
		if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
			p.closeAll()
			return nil, fmt.Errorf("sandbox: pipe: %w", err)
		}
	}
	return p, nil
}

// closeChildEnds closes the ends the child inherited.
func (p *hostPipes) closeChildEnds() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if f != nil {
			f.Close()
		}
	}
}

// closeAll closes every end; closing twice is harmless.
func (p *hostPipes) closeAll() {
	for _, f := range []*os.File{p.stdinR, p.stdinW, p.stdoutR, p.stdoutW, p.stderrR, p.stderrW} {
		if f != nil {
			f.Close()
		}
	}
}

// copy feeds stdin and drains stdout and stderr; the channel closes when both
// outputs reached EOF (or their pipes were closed). Feeding stdin is not
// waited for: a reader that never ends must not hold the run.
func (p *hostPipes) copy(stdin io.Reader, stdout, stderr io.Writer) <-chan struct{} {
	if stdin != nil {
		go func() {
			_, _ = io.Copy(p.stdinW, stdin)
			p.stdinW.Close()
		}()
	}
	done := make(chan struct{})
	outDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(stdout, p.stdoutR)
		close(outDone)
	}()
	go func() {
		_, _ = io.Copy(stderr, p.stderrR)
		<-outDone
		close(done)
	}()
	return done
}

// drain waits for the output copies started by copy to end, up to grace
// once the process group is gone: every writer of the pipes was in the
// group, so they reach EOF, but a process that left the group (setsid) may
// still hold them, and is not waited for.
func (p *hostPipes) drain(copied <-chan struct{}, grace time.Duration) {
	select {
	case <-copied:
	case <-time.After(grace):
		p.closeAll()
		<-copied
	}
}
