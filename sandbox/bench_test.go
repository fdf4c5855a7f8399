package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// BenchmarkRoundTrip runs `true` through each runner: for the image runner a
// whole create, attach, start, wait and remove of a container; for the host
// runner a process start and wait. Run it with -count 6 or more and compare
// the two with benchstat.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	b.Run("runner=image", func(b *testing.B) {
		r := newTestImageRunner(b)
		spec := Spec{Image: r.image, UID: agentUID, GID: agentUID, Argv: []string{"true"}}
		for b.Loop() {
			res, err := r.Run(ctx, spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Run: %v %+v", err, res)
			}
		}
	})
	b.Run("runner=host", func(b *testing.B) {
		r := NewHostRunner(HostOptions{})
		spec := Spec{Argv: []string{"/bin/true"}}
		for b.Loop() {
			res, err := r.Run(ctx, spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Run: %v %+v", err, res)
			}
		}
	})
}

// BenchmarkContainerPhases splits the image runner's round trip into its
// Docker API calls, reported as extra metrics (ms per call), to show where the
// time goes.
func BenchmarkContainerPhases(b *testing.B) {
	r := newTestImageRunner(b)
	ctx := context.Background()
	spec := Spec{Image: r.image, UID: agentUID, GID: agentUID, Argv: []string{"true"}}
	cfg, hostCfg, err := r.containerConfig(&spec)
	if err != nil {
		b.Fatal(err)
	}
	var create, attach, start, wait, remove time.Duration
	for b.Loop() {
		t0 := time.Now()
		c, err := r.api.ContainerCreate(ctx, cfg, hostCfg, nil, nil, "")
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		stream, err := r.api.ContainerAttach(ctx, c.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
		if err != nil {
			b.Fatal(err)
		}
		waited, waitErr := r.api.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
		t2 := time.Now()
		if err := r.api.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		select {
		case <-waited:
		case err := <-waitErr:
			b.Fatal(err)
		}
		t4 := time.Now()
		stream.Close()
		if err := r.api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		create += t1.Sub(t0)
		attach += t2.Sub(t1)
		start += t3.Sub(t2)
		wait += t4.Sub(t3)
		remove += t5.Sub(t4)
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(create)/n, "create-ms/op")
	b.ReportMetric(float64(attach)/n, "attach-ms/op")
	b.ReportMetric(float64(start)/n, "start-ms/op")
	b.ReportMetric(float64(wait)/n, "wait-ms/op")
	b.ReportMetric(float64(remove)/n, "remove-ms/op")
}
