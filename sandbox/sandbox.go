// Package sandbox owns where an agent CLI runs: the Runner interface and the
// Spec the engine fills, the image runner (a Docker container driven through the
// Docker Engine SDK), the host runner (a plain process), credential mount
// parsing, and the overlap check the session resolver needs.
//
// A run sees its worktree and nothing else: the environment is an allowlist,
// the command is an argv (never a shell string), credential mounts are
// read-only, and every run ends by its wall-clock timeout.
//
// It imports no other Alfred package but internal/tunnel.
package sandbox

import (
	"context"
	"io"
	"time"
)

// Mount is a bind mount of a host path into the sandbox.
type Mount struct {
	Host      string // absolute path on the host
	Container string // absolute path inside the container
	ReadOnly  bool
}

// Tmpfs is an in-memory folder inside the container owned by the spec's user.
type Tmpfs struct {
	Path string
	Mode uint32 // e.g. 0o700; 0 means 0o700
	Size int64  // bytes; 0 means no limit of its own (its pages count against MemoryBytes)
}

// Spec is everything a runner needs to start one agent process.
type Spec struct {
	// Image is the container image (image runner only).
	Image string
	// UID and GID run the process; neither may be 0 in the image runner.
	// The host runner runs the process as the bot's own user.
	UID, GID int
	// Workdir is the working directory inside the sandbox (usually /workspace).
	Workdir string
	// Argv is the command. It is never passed through a shell.
	Argv []string
	// Env is the whole environment of the process: nothing else reaches it.
	Env map[string]string

	// Worktree is mounted at /workspace (WorkspacePath), read-only in
	// read-only phases; its Container is empty or /workspace. The host runner
	// runs in Worktree.Host instead and cannot enforce read-only.
	Worktree *Mount
	// Credentials are always mounted read-only, whatever ReadOnly says.
	Credentials []Mount
	// Session is the agent's session state, read-write even in read-only
	// phases; its Container sits under /home/agent and overlaps no credential
	// mount. The host runner refuses a Spec with one (ErrSessionOnHost).
	Session *Mount
	// Tmpfs lists extra in-memory folders (HOME and the folders between it and the mounts under it are added by the runner).
	Tmpfs []Tmpfs
	// Binds are more bind mounts, read-write unless ReadOnly, outside
	// /workspace: the model gateway's socket (a socket file may be bound
	// on its own) and, optionally, its forwarder. The host runner refuses a
	// Spec with any (ErrBindsOnHost).
	Binds []Mount
	// Prefix goes before Argv in the command actually run: a wrapper that
	// runs Argv as its child, such as the gateway's forwarder
	// (alfred-forward -port N -socket PATH --). Adapters set Argv only, so a
	// Prefix the engine sets survives them. The host runner refuses it.
	Prefix []string

	// Network is a Docker network name; "none" (the default when empty) gives only lo.
	Network string
	// NanoCPUs, MemoryBytes and PidsLimit bound the container; 0 means the runner's default.
	NanoCPUs    int64
	MemoryBytes int64
	PidsLimit   int64
	// Timeout is the wall-clock limit from the start of the process, after
	// which it gets SIGTERM, then SIGKILL after the runner's grace period;
	// 0 means the runner's default.
	Timeout time.Duration

	// Stdin feeds the process; nil means empty.
	Stdin io.Reader
	// Stdout and Stderr receive the output as it comes, when set. The Result
	// keeps a copy either way.
	Stdout, Stderr io.Writer
	// Labels are extra container labels (e.g. the run id), for leftovers and tracing.
	Labels map[string]string
}

// Outcome is how a sandboxed process ended.
type Outcome string

// Outcomes.
const (
	OutcomeExited   Outcome = "exited"   // the process ended by itself; see ExitCode
	OutcomeTimeout  Outcome = "timeout"  // killed at Spec.Timeout
	OutcomeCanceled Outcome = "canceled" // the context was canceled
)

// Result is what a finished process left.
type Result struct {
	Outcome Outcome
	// ExitCode is the process's exit status when Outcome is OutcomeExited
	// (128+n when signal n ended it), else -1.
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	Started  time.Time
	Duration time.Duration
}

// Network names a Spec may carry besides a Docker network's.
const (
	NetworkNone = "none" // only loopback (Docker); all traffic denied (Kubernetes)
	NetworkPod  = "pod"  // the cluster's Pod network (the kubernetes runner only)
)

// InContainer tells whether the runner named name runs each Spec in a
// container of its own ("image": Docker, "kubernetes": a Pod), where a
// session folder is mounted and HOME is the agent's; "host" does not.
func InContainer(name string) bool { return name == "image" || name == "kubernetes" }

// Runner runs one Spec to its end and cleans up after it, whatever the outcome.
type Runner interface {
	// Name is "image", "kubernetes" or "host".
	Name() string
	// Run starts the process and waits for it. An error means the sandbox could
	// not be set up or torn down; a process that fails or times out is a Result.
	// When only the tear-down failed, Run returns both the Result and the error.
	Run(ctx context.Context, spec Spec) (*Result, error)
}
