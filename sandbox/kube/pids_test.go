package kube

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRunnerPidsLimit: a run that starts sleeps in a loop, twice as many as
// the node's podPidsLimit allows a Pod, hits the limit (the shell cannot
// fork), its Pod is deleted like any other, and the node still runs the next
// Pod. The limit is the kubelet's, set by scripts/k8s.sh, which writes it in
// ALFRED_TEST_K8S_POD_PIDS_LIMIT.
func TestRunnerPidsLimit(t *testing.T) {
	r := newTestRunner(t) // first: it skips under -short, or fails without a cluster
	env := os.Getenv("ALFRED_TEST_K8S_POD_PIDS_LIMIT")
	limit, err := strconv.Atoi(env)
	if err != nil || limit <= 0 {
		t.Fatalf("ALFRED_TEST_K8S_POD_PIDS_LIMIT=%q: the test cluster gives no podPidsLimit: it was started by a scripts/k8s.sh without one; restart it (scripts/k8s.sh stop && scripts/k8s.sh start)", env)
	}
	spec := r.spec(`i=0; while [ $i -lt ` + strconv.Itoa(2*limit) + ` ]; do sleep 120 & i=$((i+1)); echo $i; done`)
	spec.Timeout = 2 * time.Minute
	res := r.run(t, spec)
	lines := strings.Fields(string(res.Stdout))
	started := 0
	if len(lines) > 0 {
		started, _ = strconv.Atoi(lines[len(lines)-1])
	}
	if started >= limit || started < limit/4 {
		t.Errorf("the run started %d sleeps, want fewer than the limit %d (and some); exit %d, stderr %q", started, limit, res.ExitCode, res.Stderr)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "fork") {
		t.Errorf("exit %d, stderr %q: want the shell's failure to fork", res.ExitCode, res.Stderr)
	}
	t.Logf("started %d sleeps under podPidsLimit %d; exit %d, stderr %q", started, limit, res.ExitCode, res.Stderr)

	after := r.run(t, r.spec("echo alive"))
	if string(after.Stdout) != "alive\n" {
		t.Errorf("the next run printed %q, want alive", after.Stdout)
	}
	node, err := r.c.client.CoreV1().Nodes().Get(context.Background(), os.Getenv("ALFRED_TEST_K8S_NODE"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", os.Getenv("ALFRED_TEST_K8S_NODE"), err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			t.Errorf("node %s not Ready after the run: %s %s", node.Name, c.Reason, c.Message)
		}
	}
}
