package sandbox

import (
	"context"
	"sync"
	"testing"
)

// counting is a runner that says how many sandboxes it holds.
type counting interface {
	Runner
	Running() int
}

// TestRunningCountsSandboxes: a runner counts its sandbox while the process
// runs and not after, however the run ended, and never one it could not make.
func TestRunningCountsSandboxes(t *testing.T) {
	runners := map[string]func(t *testing.T) (counting, Spec){
		"host": func(*testing.T) (counting, Spec) {
			return newTestHostRunner(), Spec{Env: map[string]string{"PATH": hostPATH}}
		},
		"image": func(t *testing.T) (counting, Spec) {
			r := newTestImageRunner(t)
			return r.ImageRunner, r.spec("")
		},
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		noSuch bool // the image or program does not exist
		during int  // Running() at the process's first output; -1: it writes none
		cancel bool // the run is canceled at its first output, else it ends by itself
	}{
		// The process outlives its first output a little: the output is read
		// while it runs, and a process that exits at once may be counted out
		// before its last line is read.
		{name: "ends by itself", argv: []string{"/bin/sh", "-c", "echo up; sleep 0.3"}, during: 1},
		{name: "canceled", argv: []string{"/bin/sh", "-c", "echo up; exec sleep 300"}, during: 1, cancel: true},
		{name: "fails", argv: []string{"/bin/sh", "-c", "echo up; sleep 0.3; exit 3"}, during: 1},
		{name: "never starts", argv: []string{"/no/such/program"}, noSuch: true, during: -1},
	} {
		for name, mk := range runners {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				r, spec := mk(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				spec.Argv = tc.argv
				if tc.noSuch && name == "image" {
					spec.Image = "alfred-test/no-such-image:latest"
				}
				seen := &firstWrite{during: -1, look: r.Running}
				if tc.cancel {
					seen.then = cancel
				}
				spec.Stdout = seen
				_, err := r.Run(ctx, spec)
				if (err != nil) != tc.noSuch {
					t.Fatalf("Run: %v", err)
				}
				if got := seen.value(); got != tc.during {
					t.Errorf("while the process ran: %d, want %d", got, tc.during)
				}
				if got := r.Running(); got != 0 {
					t.Errorf("after the run: %d, want 0", got)
				}
			})
		}
	}
}

// firstWrite notes look() at its first write, then calls then.
type firstWrite struct {
	look func() int
	then func()

	mu     sync.Mutex
	wrote  bool
	during int
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wrote {
		w.wrote, w.during = true, w.look()
		if w.then != nil {
			w.then()
		}
	}
	return len(p), nil
}

func (w *firstWrite) value() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.during
}
