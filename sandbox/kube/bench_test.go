package kube

import (
	"context"
	"testing"

	"github.com/alchemic-studio/alfred/sandbox"
)

// BenchmarkRoundTrip runs `true` through the Kubernetes runner: a whole
// create, schedule, stage, start, log, copy-out and delete of a Pod per op.
// Compare it with sandbox.BenchmarkRoundTrip (Docker, host).
func BenchmarkRoundTrip(b *testing.B) {
	r := newTestRunner(b)
	ctx := context.Background()
	spec := sandbox.Spec{Image: r.c.image, UID: agentUID, GID: agentUID, Argv: []string{"true"}}
	for b.Loop() {
		res, err := r.Run(ctx, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run: %v %+v", err, res)
		}
	}
}
