package fake

import (
	"context"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// BenchmarkRun measures the shared flow around a simulated agent (no
// process), and with a real `true` started through the host runner.
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	cases := []struct {
		name string
		opts Options
		ref  func(id string) *agents.SessionRef
	}{
		{"no-session", Options{}, nil},
		{"resume", Options{ResumableSessions: true}, func(id string) *agents.SessionRef { return &agents.SessionRef{Name: "b", ResumeID: id} }},
		{"exec-true-host", Options{Exec: []string{"/bin/true"}}, nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a, err := New(c.opts)
			if err != nil {
				b.Fatal(err)
			}
			req := agents.Request{Prompt: "p", Runner: sandbox.NewHostRunner(sandbox.HostOptions{})}
			req.Sandbox.Env = map[string]string{"PATH": "/usr/bin:/bin"}
			for b.Loop() {
				if c.ref != nil {
					req.Session = c.ref("5b0f2c2e-1111-4a4a-9b9b-123456789abc")
				}
				res, err := a.Run(ctx, req)
				if err != nil || res.Outcome != agents.OutcomeSucceeded {
					b.Fatalf("run: %v %+v", err, res)
				}
			}
		})
	}
}
