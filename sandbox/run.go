package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// WorkspacePath is where the worktree is mounted in the container.
const WorkspacePath = "/workspace"

// Defaults used when a Spec or the runner options leave a value at zero.
const (
	DefaultTimeout   = time.Hour
	DefaultKillGrace = 2 * time.Second
)

// ErrSessionOnHost is returned by the host runner for a Spec with a Session
// mount: sessions are resumed only in containers, so such a Spec is an engine bug.
var ErrSessionOnHost = errors.New("sandbox: the host runner never gets a session mount")

// ErrBindsOnHost is returned by the host runner for a Spec with Binds or a
// Prefix: they seal a container (the model gateway), which a host process
// cannot be.
var ErrBindsOnHost = errors.New("sandbox: the host runner cannot bind mounts or wrap the command (the model gateway needs the image runner)")

// checkSpec validates what both runners need.
func checkSpec(spec *Spec) error {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return errors.New("sandbox: empty argv")
	}
	if len(spec.Prefix) > 0 && spec.Prefix[0] == "" {
		return errors.New("sandbox: empty prefix command")
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("sandbox: invalid environment variable %q", k)
		}
	}
	if spec.Timeout < 0 {
		return fmt.Errorf("sandbox: negative timeout %s", spec.Timeout)
	}
	return nil
}

// envList renders env as sorted KEY=VALUE pairs, never nil.
func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

// Capture keeps a copy of a stream and forwards it to the Spec's writer,
// for every runner. A failing forward writer is dropped so the copy and the
// process keep going.
type Capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
	w   io.Writer
}

// NewCapture forwards to w (nil: keeps the copy only).
func NewCapture(w io.Writer) *Capture { return &Capture{w: w} }

func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.w != nil {
		if _, err := c.w.Write(p); err != nil {
			c.w = nil
		}
	}
	return len(p), nil
}

// Bytes returns a copy of what was captured so far.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// timeoutOf returns the Spec's timeout or the default.
func timeoutOf(spec *Spec, def time.Duration) time.Duration {
	if spec.Timeout > 0 {
		return spec.Timeout
	}
	if def > 0 {
		return def
	}
	return DefaultTimeout
}
