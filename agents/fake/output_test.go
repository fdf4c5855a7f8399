package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// lockedBuffer is a bytes.Buffer safe for the runner's copy goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestOutputReachesTheSpecWriters: what a real Exec process prints, then the
// simulated answer, reach the Spec's Stdout and Stderr as they come; the
// Result keeps the simulated answer alone.
func TestOutputReachesTheSpecWriters(t *testing.T) {
	a, err := New(Options{Reply: "all done", Exec: []string{"/bin/sh", "-c", "echo working; echo warming up >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	res, err := a.Run(context.Background(), agents.Request{Prompt: "p", Runner: sandbox.NewHostRunner(sandbox.HostOptions{}),
		Sandbox: sandbox.Spec{Workdir: t.TempDir(), Stdout: &stdout, Stderr: &stderr}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agents.OutcomeSucceeded || res.Text != "all done" {
		t.Fatalf("result = %+v", res)
	}
	first, answer, ok := strings.Cut(stdout.String(), "\n")
	var o output
	if !ok || first != "working" || json.Unmarshal([]byte(answer), &o) != nil || o.Result != "all done" {
		t.Errorf("stdout %q: want the process's line, then the simulated answer", stdout.String())
	}
	if got := stderr.String(); got != "warming up\n" {
		t.Errorf("stderr %q", got)
	}
	if bytes.Contains(res.Stdout, []byte("working")) {
		t.Errorf("the Result keeps the process's output: %q", res.Stdout)
	}
}
