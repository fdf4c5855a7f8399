package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Where the time of a run on Kubernetes goes (issue 32 item 5): the life of
// each Pod as a watch from the test sees it (millisecond times; the Pod's
// own status has seconds only), the runner's debug records from the bot's
// log, and the CPU the cluster's processes used meanwhile.

// phases of a Pod's life, in order, as the watch shows them.
var phases = []string{"created", "scheduled", "sandbox", "helper", "agent", "ended", "deleting"}

// podTrace notes when the watch first showed each phase of each Pod.
type podTrace struct {
	mu   sync.Mutex
	at   map[string]map[string]time.Time // Pod, phase
	node map[string]string
	stop context.CancelFunc
	done chan struct{}
}

// tracePods watches the Pods of instance until the returned trace is
// stopped.
func tracePods(t testing.TB, k *kube, instance string) *podTrace {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &podTrace{at: map[string]map[string]time.Time{}, node: map[string]string{}, stop: cancel, done: make(chan struct{})}
	w, err := k.client.CoreV1().Pods(k.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: selectInstance(instance), ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch Pods: %v", err)
	}
	go func() {
		defer close(tr.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					tr.note(pod, ev.Type, time.Now())
				}
			}
		}
	}()
	return tr
}

// note records the phases pod shows at now.
func (tr *podTrace) note(pod *corev1.Pod, typ watch.EventType, now time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	at := tr.at[pod.Name]
	if at == nil {
		at = map[string]time.Time{}
		tr.at[pod.Name] = at
	}
	set := func(phase string, ok bool) {
		if _, seen := at[phase]; ok && !seen {
			at[phase] = now
		}
	}
	set("created", true)
	set("scheduled", pod.Spec.NodeName != "")
	tr.node[pod.Name] = pod.Spec.NodeName
	for _, c := range pod.Status.Conditions {
		set("sandbox", c.Type == "PodReadyToStartContainers" && c.Status == corev1.ConditionTrue)
	}
	for _, c := range pod.Status.ContainerStatuses {
		set(c.Name, c.State.Running != nil || c.State.Terminated != nil)
		set("ended", c.Name == "agent" && c.State.Terminated != nil)
	}
	set("deleting", typ == watch.Deleted || pod.DeletionTimestamp != nil)
}

// result stops the watch and returns each Pod's phases and nodes.
func (tr *podTrace) result() (map[string]map[string]time.Time, map[string]string) {
	tr.stop()
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.at, tr.node
}

// runnerRecords are the kubernetes runner's debug records of the bot's log
// (the records of sandbox/kube: "staged", "staged, the agent starts",
// "agent ended", "copied out"), by Pod and message.
func runnerRecords(t testing.TB, pid int) map[string]map[string]time.Time {
	path, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid)) // the bot's log file
	if err != nil {
		t.Fatalf("the bot's log: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the bot's log: %v", err)
	}
	defer f.Close()
	out := map[string]map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			Pod  string    `json:"pod"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Pod == "" {
			continue
		}
		if out[rec.Pod] == nil {
			out[rec.Pod] = map[string]time.Time{}
		}
		if _, ok := out[rec.Pod][rec.Msg]; !ok {
			out[rec.Pod][rec.Msg] = rec.Time
		}
	}
	return out
}

// timeline is one Pod's phases and the runner's records as offsets from t0,
// in the order they came.
func timeline(t0 time.Time, at ...map[string]time.Time) string {
	type mark struct {
		name string
		d    time.Duration
	}
	var marks []mark
	for _, m := range at {
		for name, when := range m {
			marks = append(marks, mark{name, when.Sub(t0)})
		}
	}
	slices.SortFunc(marks, func(a, b mark) int { return int(a.d - b.d) })
	parts := make([]string, len(marks))
	for i, m := range marks {
		parts[i] = fmt.Sprintf("%s %.0fms", m.name, float64(m.d)/float64(time.Millisecond))
	}
	return strings.Join(parts, " | ")
}

// phaseStats are, for each phase, the median and the latest offset from t0
// over the Pods.
func phaseStats(t0 time.Time, pods map[string]map[string]time.Time) string {
	var parts []string
	for _, phase := range phases {
		var ds []time.Duration
		for _, at := range pods {
			if when, ok := at[phase]; ok {
				ds = append(ds, when.Sub(t0))
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		parts = append(parts, fmt.Sprintf("%s med %.2fs max %.2fs", phase, ds[len(ds)/2].Seconds(), ds[len(ds)-1].Seconds()))
	}
	return strings.Join(parts, " | ")
}

// clusterProcs are the processes whose CPU a burst is charged with: the
// cluster's (scripts/k8s.sh) and the private Docker daemon's.
var clusterProcs = []struct{ name, comm, argv string }{
	{"kube-apiserver", "kube-apiserver", ""},
	{"etcd", "etcd", "alfred-test-k8s"},
	{"kubelets", "kubelet", ""},
	{"containerd-k8s", "containerd", "alfred-test-k8s"},
	{"containerd-docker", "containerd", "alfred-test-docker"},
	{"shims-k8s", "containerd-shim", "k8s.io"},
	{"shims-docker", "containerd-shim", "moby"},
	{"dockerd", "dockerd", "alfred-test-docker"},
	{"kube-router", "kube-router", ""},
	{"kube-proxy", "kube-proxy", ""},
	{"scheduler", "kube-scheduler", ""},
	{"controller-manager", "kube-controller", ""},
}

// procCPU is the CPU time used so far by each of clusterProcs (with their
// reaped children's: runc under the shims, iptables under kube-router, CNI
// plugins under containerd), and by the whole machine ("machine", from
// /proc/stat): what a burst costs beyond the named processes (the agents,
// shims that ended, the kernel's own work) is the difference.
func procCPU(t testing.TB) map[string]time.Duration {
	out := map[string]time.Duration{"machine": machineCPU()}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		comm, err := os.ReadFile(dir + "/comm")
		if err != nil {
			continue
		}
		argv, _ := os.ReadFile(dir + "/cmdline")
		for _, p := range clusterProcs {
			if strings.TrimSpace(string(comm)) == p.comm && strings.Contains(string(argv), p.argv) {
				pid, _ := strconv.Atoi(filepath.Base(dir))
				out[p.name] += cpuTimeOf(pid)
			}
		}
	}
	return out
}

// cpuTimeOf is cpuTime without failing: a process may end meanwhile.
func cpuTimeOf(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+2:]))
	var ticks int64
	for _, k := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
		v, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// machineCPU is the CPU time every core of the machine spent busy so far.
func machineCPU() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal
	var ticks int64
	for _, k := range []int{1, 2, 3, 6, 7} {
		if k < len(f) {
			v, _ := strconv.ParseInt(f[k], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// cpuUsed says the CPU each process used between before and after, and the
// machine's load average.
func cpuUsed(before, after map[string]time.Duration) string {
	parts := []string{fmt.Sprintf("machine %.2fs", (after["machine"] - before["machine"]).Seconds())}
	for _, p := range clusterProcs {
		parts = append(parts, fmt.Sprintf("%s %.2fs", p.name, (after[p.name]-before[p.name]).Seconds()))
	}
	load, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(parts, ", ") + "; load " + strings.Join(strings.Fields(string(load))[:3], " ")
}

func selectInstance(instance string) string {
	if instance == "" {
		return "alfred.managed=true"
	}
	return "alfred.instance=" + instance
}
