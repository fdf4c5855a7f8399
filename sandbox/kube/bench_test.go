package kube

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// BenchmarkSixteenSleeps runs 16 runs of `sleep 10` at once and reports the
// CPU the whole machine spent meanwhile (/proc/stat): what a run costs the
// node while its agent does nothing (the Pod's own processes, the kubelet's
// and the runtime's work for its execs and log), beside the wall time.
func BenchmarkSixteenSleeps(b *testing.B) {
	r := newTestRunner(b)
	ctx := context.Background()
	spec := sandbox.Spec{Image: r.c.image, UID: agentUID, GID: agentUID, Argv: []string{"sleep", "10"}}
	var cpu time.Duration
	for b.Loop() {
		// The teardown of an earlier burst (containers, sandboxes, rules)
		// goes on after its runs returned: let it end first.
		b.StopTimer()
		time.Sleep(20 * time.Second)
		b.StartTimer()
		before := machineBusy(b)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				if res, err := r.Run(ctx, spec); err != nil || res.ExitCode != 0 {
					b.Errorf("Run: %v %+v", err, res)
				}
			})
		}
		wg.Wait()
		cpu += machineBusy(b) - before
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "machine-cpu-s/op")
}

// machineBusy is the CPU time the machine's cores spent busy so far.
func machineBusy(b *testing.B) time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatalf("read /proc/stat: %v", err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq
	var ticks int64
	for _, k := range []int{1, 2, 3, 6, 7} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q: %v", line, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
