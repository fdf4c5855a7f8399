package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"path"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// Container labels the image runner sets. Spec labels cannot override them.
const (
	LabelManaged  = "alfred.managed"  // "true" on every container of the image runner
	LabelInstance = "alfred.instance" // ImageOptions.Instance
	LabelRunner   = "alfred.runner"   // the id of the ImageRunner that made it
)

// Defaults of the image runner's resource limits.
const (
	DefaultNanoCPUs    = 1_000_000_000 // one CPU
	DefaultMemoryBytes = 2 << 30       // 2 GiB, no swap
	DefaultPidsLimit   = 512
)

// teardownTimeout bounds the calls made after a run ends, which must not
// depend on the caller's (possibly canceled) context.
const teardownTimeout = 30 * time.Second

// startTimeout bounds the start call, which ignores the caller's context.
const startTimeout = 2 * time.Minute

// drainTimeout bounds the wait for the output stream to end after the
// container did; it normally ends at once.
const drainTimeout = 10 * time.Second

// ImageOptions tune the image runner.
type ImageOptions struct {
	// Host is the daemon address, e.g. unix:///var/run/docker.sock. Empty
	// means DOCKER_HOST, else Docker's default socket.
	Host string
	// Instance names this bot installation. Every container carries it in a
	// label and Cleanup removes only this instance's containers, so two bots
	// may share a daemon. Empty means "default".
	Instance string
	// Timeout applies when a Spec has none; 0 means DefaultTimeout.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL at the timeout or a
	// cancel, rounded up to whole seconds; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// NanoCPUs, MemoryBytes and PidsLimit apply when a Spec leaves them at 0.
	NanoCPUs, MemoryBytes, PidsLimit int64
	// Logger receives debug and warning records; nil means slog.Default().
	Logger *slog.Logger
}

// ImageRunner runs each Spec in a fresh container through the Docker Engine
// API and removes the container afterwards, whatever the outcome.
//
// The container runs Argv directly (as entrypoint and arguments, never through a
// shell) under a tiny init (docker-init) that forwards signals, as the non-root
// UID:GID, with all capabilities dropped, no-new-privileges, the Spec's limits
// (defaults: one CPU, 2 GiB without swap, 512 pids) and network "none" (a
// network namespace of its own with only lo) unless the Spec names one. Its environment is Spec.Env plus HOME=/home/agent (and
// what the image itself declares, such as PATH); nothing of the bot's own.
//
// Mounts: HOME (/home/agent) is a tmpfs owned by UID:GID with mode 0700; the
// worktree is bound at /workspace, read-only when Worktree.ReadOnly; credential
// mounts are always read-only; the session mount is read-write; Binds are as
// they say (the model gateway's socket, read-write). The command is Prefix
// followed by Argv. Every folder
// between HOME and the session mount (the session's parent included) is its
// own tmpfs owned by UID:GID with mode 0700, because Docker would create those
// mountpoints as root and the CLI could not write beside its session folder.
// Bind sources are never created or chowned: a read-write worktree and the
// session folder must be writable by UID:GID on the host.
//
// Containers are labelled alfred.managed=true, alfred.instance and
// alfred.runner. A bot that crashed leaves its containers behind: call Cleanup
// once at start-up, before the first Run.
type ImageRunner struct {
	cli     *client.Client
	opts    ImageOptions
	id      string
	log     *slog.Logger
	running atomic.Int64 // containers created and not yet removed
}

// NewImageRunner connects to the Docker daemon (negotiating the API version,
// so a daemon as old as 20.10, API 1.41, works) and checks that it answers.
func NewImageRunner(ctx context.Context, opts ImageOptions) (*ImageRunner, error) {
	clientOpts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if opts.Host != "" {
		clientOpts = append(clientOpts, client.WithHost(opts.Host))
	}
	cli, err := client.NewClientWithOpts(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: docker client: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(pingCtx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("sandbox: the Docker daemon at %s does not answer (is dockerd running, and is the address right?): %w", cli.DaemonHost(), err)
	}
	if opts.Instance == "" {
		opts.Instance = "default"
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.NanoCPUs <= 0 {
		opts.NanoCPUs = DefaultNanoCPUs
	}
	if opts.MemoryBytes <= 0 {
		opts.MemoryBytes = DefaultMemoryBytes
	}
	if opts.PidsLimit <= 0 {
		opts.PidsLimit = DefaultPidsLimit
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	id := randomHex(8)
	return &ImageRunner{cli: cli, opts: opts, id: id, log: log.With("runner", "image", "runner_id", id)}, nil
}

// Name returns "image".
func (r *ImageRunner) Name() string { return "image" }

// Close releases the connection to the daemon.
func (r *ImageRunner) Close() error { return r.cli.Close() }

// Running returns how many containers Run created and has not removed yet
// (one whose removal failed stays counted: it may still be there).
func (r *ImageRunner) Running() int { return int(r.running.Load()) }

// Cleanup removes the containers of this instance that another ImageRunner
// made, such as the leftovers of a bot that crashed, and returns how many it
// removed. Call it once when the bot starts: it would also remove the running
// containers of another live process of the same instance.
func (r *ImageRunner) Cleanup(ctx context.Context) (int, error) {
	list, err := r.cli.ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", LabelManaged+"=true"),
			filters.Arg("label", LabelInstance+"="+r.opts.Instance),
		),
	})
	if err != nil {
		return 0, fmt.Errorf("sandbox: list leftover containers: %w", err)
	}
	removed := 0
	var errs []error
	for _, c := range list {
		if c.Labels[LabelRunner] == r.id {
			continue
		}
		err := r.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove leftover container %.12s: %w", c.ID, err))
			continue
		}
		removed++
		r.log.Info("removed leftover container", "container", shortID(c.ID), "state", c.State)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sandbox: %w", err)
	}
	return removed, nil
}

// Run creates the container, attaches to its streams, starts it and waits for
// its end, its timeout or ctx, then removes it. When the removal fails, Run
// returns the Result and the error.
func (r *ImageRunner) Run(ctx context.Context, spec Spec) (res *Result, err error) {
	if err := checkSpec(&spec); err != nil {
		return nil, err
	}
	cfg, hostCfg, err := r.containerConfig(&spec)
	if err != nil {
		return nil, err
	}
	// The calls that clean up must not depend on ctx, which may be canceled.
	teardown := context.WithoutCancel(ctx)
	id, err := r.create(ctx, teardown, cfg, hostCfg)
	if err != nil {
		return nil, err
	}
	r.running.Add(1)
	defer func() {
		if rmErr := r.remove(teardown, id); rmErr != nil {
			err = errors.Join(err, rmErr)
			return
		}
		r.running.Add(-1)
	}()
	return r.runContainer(ctx, teardown, id, &spec)
}

// create creates the container under a fresh name and returns its id. The
// create itself uses teardown, which outlives a canceled ctx: a request cut
// by ctx could leave the daemon making a container nobody knows of; so it
// runs to its end, and a container made after ctx ended is removed.
func (r *ImageRunner) create(ctx, teardown context.Context, cfg *container.Config, hostCfg *container.HostConfig) (string, error) {
	name := "alfred-" + randomHex(6)
	created, err := r.cli.ContainerCreate(teardown, cfg, hostCfg, nil, nil, name)
	if err == nil && ctx.Err() != nil {
		err = errors.Join(fmt.Errorf("sandbox: create container: %w", ctx.Err()), r.remove(teardown, created.ID))
		return "", err
	}
	if err != nil {
		_ = r.remove(teardown, name) // a failed create may still have made it
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("sandbox: image %q is not on the daemon (build or load it first): %w", cfg.Image, err)
		}
		return "", fmt.Errorf("sandbox: create container: %w", err)
	}
	return created.ID, nil
}

// runContainer runs a created container to its end: it attaches to its
// streams, starts it, waits for its exit, its timeout or ctx (stopping it at
// the timeout or on ctx) and collects its output. The calls that must outlive
// a canceled ctx use teardown.
func (r *ImageRunner) runContainer(ctx, teardown context.Context, id string, spec *Spec) (*Result, error) {
	log := r.log.With("container", shortID(id))
	out, err := r.attach(teardown, id, spec, log)
	if err != nil {
		return nil, err
	}
	defer out.conn.Close()

	// Watch for the exit before the start, so as not to miss it.
	waitCtx, stopWaiting := context.WithCancel(teardown)
	defer stopWaiting()
	waited, waitErr := r.cli.ContainerWait(waitCtx, id, container.WaitConditionNextExit)
	if err := r.start(ctx, teardown, id); err != nil {
		return nil, err
	}
	started := time.Now()
	outcome, exitCode, err := awaitExit(ctx, waited, waitErr, timeoutOf(spec, r.opts.Timeout))
	if err != nil {
		return nil, err
	}
	if outcome != OutcomeExited {
		log.Debug("stopping container", "outcome", outcome)
		r.stop(teardown, id, log)
		select {
		case <-waited:
		case <-waitErr:
		case <-time.After(teardownTimeout):
		}
	}
	out.drain(log)
	return &Result{
		Outcome:  outcome,
		ExitCode: exitCode,
		Stdout:   out.stdout.Bytes(),
		Stderr:   out.stderr.Bytes(),
		Started:  started,
		Duration: time.Since(started),
	}, nil
}

// attachment is a container's attached streams and what came out of them.
type attachment struct {
	conn           types.HijackedResponse
	stdout, stderr *Capture
	copied         chan struct{} // closed when the output stream has ended
}

// attach attaches to the container's streams, feeds them Spec.Stdin and
// captures the output. Call it before the start so no output is lost; the
// stream ends when the container does. ctx must outlive a canceled run to
// keep the output so far.
func (r *ImageRunner) attach(ctx context.Context, id string, spec *Spec, log *slog.Logger) (*attachment, error) {
	conn, err := r.cli.ContainerAttach(ctx, id, container.AttachOptions{
		Stream: true, Stdin: spec.Stdin != nil, Stdout: true, Stderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: attach to container: %w", err)
	}
	a := &attachment{conn: conn, stdout: NewCapture(spec.Stdout), stderr: NewCapture(spec.Stderr), copied: make(chan struct{})}
	go func() {
		defer close(a.copied)
		if _, err := stdcopy.StdCopy(a.stdout, a.stderr, conn.Reader); err != nil {
			log.Debug("output stream ended", "err", err)
		}
	}()
	if spec.Stdin != nil {
		go func() {
			_, _ = io.Copy(conn.Conn, spec.Stdin)
			_ = conn.CloseWrite()
		}()
	}
	return a, nil
}

// drain waits for the rest of the output once the container has ended; a
// stream still open after drainTimeout is closed.
func (a *attachment) drain(log *slog.Logger) {
	select {
	case <-a.copied:
	case <-time.After(drainTimeout):
		log.Warn("output stream did not end after the container; closing it")
		a.conn.Close()
		<-a.copied
	}
}

// start starts the container unless ctx has already ended. Once asked, the
// start is seen through (on teardown, within startTimeout): the process may
// already run when ctx ends, and the wait then turns that into
// OutcomeCanceled.
func (r *ImageRunner) start(ctx, teardown context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sandbox: before start: %w", err)
	}
	startCtx, cancel := context.WithTimeout(teardown, startTimeout)
	defer cancel()
	if err := r.cli.ContainerStart(startCtx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("sandbox: start container: %w", err)
	}
	return nil
}

// awaitExit waits for the container's exit (reported on waited, or a failed
// wait on waitErr), the timeout or ctx, and returns how the run ended. The
// exit code is -1 unless the outcome is OutcomeExited.
func awaitExit(ctx context.Context, waited <-chan container.WaitResponse, waitErr <-chan error, timeout time.Duration) (Outcome, int, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case w := <-waited:
		if w.Error != nil && w.Error.Message != "" {
			return "", -1, fmt.Errorf("sandbox: wait for container: %s", w.Error.Message)
		}
		return OutcomeExited, int(w.StatusCode), nil
	case err := <-waitErr:
		return "", -1, fmt.Errorf("sandbox: wait for container: %w", err)
	case <-timer.C:
		return OutcomeTimeout, -1, nil
	case <-ctx.Done():
		return OutcomeCanceled, -1, nil
	}
}

// stop sends SIGTERM, then SIGKILL after the grace period.
func (r *ImageRunner) stop(ctx context.Context, id string, log *slog.Logger) {
	grace := int(math.Ceil(r.opts.KillGrace.Seconds()))
	ctx, cancel := context.WithTimeout(ctx, teardownTimeout+r.opts.KillGrace)
	defer cancel()
	if err := r.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &grace}); err != nil {
		log.Warn("stop container failed; killing it", "err", err)
		if err := r.cli.ContainerKill(ctx, id, "KILL"); err != nil {
			log.Warn("kill container failed", "err", err)
		}
	}
}

// remove force-removes a container; a container already gone is fine.
func (r *ImageRunner) remove(ctx context.Context, idOrName string) error {
	ctx, cancel := context.WithTimeout(ctx, teardownTimeout)
	defer cancel()
	err := r.cli.ContainerRemove(ctx, idOrName, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("sandbox: remove container %s: %w", shortID(idOrName), err)
	}
	return nil
}

// containerConfig turns a Spec into the container's configuration.
func (r *ImageRunner) containerConfig(spec *Spec) (*container.Config, *container.HostConfig, error) {
	if err := CheckContainerSpec(spec); err != nil {
		return nil, nil, err
	}
	mounts, tmpfs, err := containerMounts(spec)
	if err != nil {
		return nil, nil, err
	}
	workdir := spec.Workdir
	if workdir == "" && spec.Worktree != nil {
		workdir = WorkspacePath
	}
	if workdir != "" && !path.IsAbs(workdir) {
		return nil, nil, fmt.Errorf("sandbox: workdir %q is not absolute", workdir)
	}
	network := cmp.Or(spec.Network, "none")
	argv := append(append([]string(nil), spec.Prefix...), spec.Argv...)
	cfg := &container.Config{
		Image:      spec.Image,
		User:       fmt.Sprintf("%d:%d", spec.UID, spec.GID),
		Entrypoint: argv[:1],
		Cmd:        argv[1:],
		Env:        containerEnv(spec.Env),
		WorkingDir: workdir,
		Labels:     r.labels(spec.Labels),
		OpenStdin:  spec.Stdin != nil,
		StdinOnce:  spec.Stdin != nil,
		// With no network, skip Docker's network sandbox: runc then makes a
		// fresh namespace with only lo itself, which halves the start time of
		// a 20.10 daemon (its libnetwork re-executes dockerd to make one).
		NetworkDisabled: network == "none",
	}
	return cfg, r.hostConfig(spec, network, mounts, tmpfs), nil
}

// containerEnv is env with HOME set to AgentHome, as KEY=VALUE pairs.
func containerEnv(env map[string]string) []string {
	all := make(map[string]string, len(env)+1)
	maps.Copy(all, env)
	all["HOME"] = AgentHome
	return envList(all)
}

// labels are the Spec's labels plus the runner's own, which win.
func (r *ImageRunner) labels(extra map[string]string) map[string]string {
	labels := make(map[string]string, len(extra)+3)
	maps.Copy(labels, extra)
	labels[LabelManaged] = "true"
	labels[LabelInstance] = r.opts.Instance
	labels[LabelRunner] = r.id
	return labels
}

// hostConfig is the confinement of the container: no capabilities, no new
// privileges, an init, the network, the mounts, and the resource limits of the
// Spec or else the runner's.
func (r *ImageRunner) hostConfig(spec *Spec, network string, mounts []mount.Mount, tmpfs map[string]string) *container.HostConfig {
	memory := positiveOr(spec.MemoryBytes, r.opts.MemoryBytes)
	pids := positiveOr(spec.PidsLimit, r.opts.PidsLimit)
	initProcess := true
	return &container.HostConfig{
		NetworkMode: container.NetworkMode(network),
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		Init:        &initProcess,
		LogConfig:   container.LogConfig{Type: "none"}, // output comes through the attach stream
		Mounts:      mounts,
		Tmpfs:       tmpfs,
		Resources: container.Resources{
			NanoCPUs:   positiveOr(spec.NanoCPUs, r.opts.NanoCPUs),
			Memory:     memory,
			MemorySwap: memory,
			PidsLimit:  &pids,
		},
	}
}

// positiveOr returns v when it is positive, else def.
func positiveOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// containerMounts lays out the bind mounts and the tmpfs folders of a Spec.
func containerMounts(spec *Spec) ([]mount.Mount, map[string]string, error) {
	l, err := ContainerLayout(spec)
	if err != nil {
		return nil, nil, err
	}
	mounts := make([]mount.Mount, 0, len(l.Mounts))
	for _, m := range l.Mounts {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.Host, Target: m.Container, ReadOnly: m.ReadOnly})
	}
	tmpfs := make(map[string]string, len(l.Tmpfs))
	for _, t := range l.Tmpfs {
		tmpfs[t.Path] = tmpfsOptions(spec.UID, spec.GID, t.Mode, t.Size)
	}
	return mounts, tmpfs, nil
}

// tmpfsOptions is the options of a tmpfs owned by uid:gid with mode and,
// when size is positive, that size limit.
func tmpfsOptions(uid, gid int, mode uint32, size int64) string {
	opts := fmt.Sprintf("uid=%d,gid=%d,mode=%o,exec", uid, gid, mode)
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	return opts
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
