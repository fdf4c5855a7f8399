package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// The benchmarks of the runners, end to end (issue 17): the built bot, the
// Forgejo fake, the real Claude Code sealed behind the gateway, on the
// image runner (the private Docker daemon) and on the kubernetes runner (the
// test cluster), side by side in one command:
//
//	go test ./e2e -run '^$' -bench . -benchtime 4x -count 3
//
// BenchmarkWebhookToAgent: from the assignment's webhook to the agent's
// first model request (the CLI runs in its container), one issue at a time.
// BenchmarkSixteenRuns: 16 issues assigned at once, ALFRED_MAX_PARALLEL_RUNS
// 16: the wall time until every analysis is done, and the bot's own CPU time
// and peak memory meanwhile (its agents run in containers or Pods, not in it).
// BenchmarkSixteenTrue: their floor, 16 bare containers or Pods at once.
// On Kubernetes the first two log each Pod's life and the runner's records
// (benchtrace_test.go), and every burst the CPU of the cluster's processes.

func BenchmarkWebhookToAgent(b *testing.B) {
	for _, runner := range []string{"image", "kubernetes"} {
		b.Run("runner="+runner, func(b *testing.B) {
			s, seen := benchScenario(b, runner, 1)
			var took []time.Duration
			var tr *podTrace
			if runner == "kubernetes" {
				tr = tracePods(b, newKube(b), s.instance)
			}
			var starts []time.Time
			b.ResetTimer()
			for i := range b.N {
				title := fmt.Sprintf("Bench %d %s", i, randomSuffix(b)) // three words: what the proxy looks for
				n := s.w.openIssue(title, "The demo should greet its users.", "type::task")
				t0 := time.Now()
				s.w.assign(n)
				at := seen.await(b, title)
				took = append(took, at.Sub(t0))
				s.waitIssue(n, "waiting_validation")
				starts = append(starts, t0, at, time.Now())
			}
			b.StopTimer()
			if tr != nil {
				s.logTimelines(b, tr, starts)
			}
			b.ReportMetric(float64(median(took).Milliseconds()), "ms-to-agent")
		})
	}
}

func BenchmarkSixteenRuns(b *testing.B) {
	const runs = 16
	for _, runner := range []string{"image", "kubernetes"} {
		b.Run("runner="+runner, func(b *testing.B) {
			s, _ := benchScenario(b, runner, runs)
			pid := s.b.cmd.Process.Pid
			var wall, cpu []time.Duration
			var peak int64
			var tr *podTrace
			if runner == "kubernetes" {
				tr = tracePods(b, newKube(b), s.instance)
			}
			b.ResetTimer()
			for range b.N {
				issues := make([]int64, runs)
				for i := range issues {
					issues[i] = s.w.openIssue(fmt.Sprintf("Sixteen %d %s", i, randomSuffix(b)), "The demo should greet its users.", "type::task")
				}
				procs0 := procCPU(b)
				cpu0, t0 := cpuTime(b, pid), time.Now()
				stop := sampleRSS(pid, &peak)
				for _, n := range issues {
					s.w.assign(n)
				}
				for _, n := range issues {
					s.waitIssue(n, "waiting_validation")
				}
				wall = append(wall, time.Since(t0))
				stop()
				cpu = append(cpu, cpuTime(b, pid)-cpu0)
				b.Logf("16 runs on %s: wall %.2fs; CPU during the burst: %s", runner, wall[len(wall)-1].Seconds(), cpuUsed(procs0, procCPU(b)))
				if tr != nil {
					pods, _ := tr.result()
					b.Logf("16 Pods, offsets from the first webhook: %s", phaseStats(t0, pods))
					tr = tracePods(b, newKube(b), s.instance)
				}
			}
			b.StopTimer()
			if tr != nil {
				tr.result()
			}
			b.ReportMetric(median(wall).Seconds(), "s-wall")
			b.ReportMetric(median(cpu).Seconds(), "s-bot-cpu")
			b.ReportMetric(float64(peak)/(1<<20), "MiB-bot-peak-rss")
		})
	}
}

// benchScenario starts the bot on runner with parallel runs at once, its
// model behind a proxy that notes when each issue's first request came.
func benchScenario(b *testing.B, runner string, parallel int) (*scenario, *firstSeen) {
	seen := &firstSeen{at: map[string]time.Time{}}
	opts := []startOption{func(testing.TB, *bot, string, string) []string {
		// Debug records: the runner's own timestamps of each run.
		return []string{"ALFRED_MAX_PARALLEL_RUNS=" + strconv.Itoa(parallel), "ALFRED_LOG_LEVEL=debug"}
	}, seen.proxy}
	if runner == "kubernetes" {
		opts = append(opts, newKube(b).option)
	}
	return start(b, newFakeWorld(b), opts...), seen
}

// logTimelines logs the life of each Pod of BenchmarkWebhookToAgent's
// iterations (starts: the webhook, the first model request and the end of
// each) as the watch and the runner saw it.
func (s *scenario) logTimelines(b *testing.B, tr *podTrace, starts []time.Time) {
	pods, nodes := tr.result()
	records := runnerRecords(b, s.b.cmd.Process.Pid)
	for name, at := range pods {
		created := at["created"]
		for i := 0; i+2 < len(starts); i += 3 {
			if created.Before(starts[i]) || created.After(starts[i+2]) {
				continue
			}
			marks := map[string]time.Time{"model request": starts[i+1], "issue done": starts[i+2]}
			b.Logf("Pod %s on %s, offsets from the webhook: %s", name, nodes[name], timeline(starts[i], at, records[name], marks))
		}
	}
}

// waitIssue waits until issue n has status and no run in progress.
func (s *scenario) waitIssue(n int64, status string) {
	s.n = n
	s.key = state.MailboxKey{Forge: "forgejo", Owner: s.owner, Project: s.name, Kind: state.KindIssue, IID: n}
	s.waitStatus(status)
}

// firstSeen is a proxy in front of the mock model noting when a request
// first named each title it is asked about.
type firstSeen struct {
	model *httputil.ReverseProxy
	mu    sync.Mutex
	at    map[string]time.Time
}

// proxy puts the recorder between the gateway and the bot's model.
func (f *firstSeen) proxy(t testing.TB, b *bot, _, _ string) []string {
	u, err := url.Parse(b.model.URL)
	if err != nil {
		t.Fatal(err)
	}
	f.model = httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return []string{"ANTHROPIC_BASE_URL=" + srv.URL}
}

func (f *firstSeen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	f.mu.Lock()
	for _, title := range benchTitle.FindAllString(string(body), -1) {
		if _, ok := f.at[title]; !ok {
			f.at[title] = now
		}
	}
	f.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.model.ServeHTTP(w, r)
}

// benchTitle finds the titles of BenchmarkWebhookToAgent's issues in a request.
var benchTitle = regexp.MustCompile(`Bench [0-9]+ [0-9a-f]{8}`)

// await waits for the first request naming title.
func (f *firstSeen) await(t testing.TB, title string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f.mu.Lock()
		at, ok := f.at[title]
		f.mu.Unlock()
		if ok {
			return at
		}
	}
	t.Fatalf("the model never saw %q", title)
	return time.Time{}
}

// cpuTime is the user and system CPU time of process pid so far.
func cpuTime(t testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat, after pid and comm
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
}

// sampleRSS notes the highest resident memory of pid in peak (bytes) every
// 50 ms until the returned function is called.
func sampleRSS(pid int, peak *int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, line := range strings.Split(string(raw), "\n") {
					if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
						*peak = max(*peak, kb<<10)
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSixteenTrue is the floor of BenchmarkSixteenRuns: 16 containers
// of the agent image running `sh -c true`, started at once with no bot and no
// runner: `docker run` on the private daemon, or bare Pods created through
// the API until all Succeeded.
func BenchmarkSixteenTrue(b *testing.B) {
	const runs = 16
	dockerHost, image, instance := agentImage(b)
	k := newKube(b)
	k.option(b, nil, image, instance) // imports the image into the cluster
	for _, runner := range []string{"image", "kubernetes"} {
		b.Run("runner="+runner, func(b *testing.B) {
			var wall []time.Duration
			for range b.N {
				procs0, t0 := procCPU(b), time.Now()
				if runner == "image" {
					dockerTrue(b, dockerHost, image, runs)
				} else {
					k.podsTrue(b, image, instance, runs)
				}
				wall = append(wall, time.Since(t0))
				b.Logf("16 x true on %s: wall %.2fs; CPU: %s", runner, wall[len(wall)-1].Seconds(), cpuUsed(procs0, procCPU(b)))
			}
			b.ReportMetric(median(wall).Seconds(), "s-wall")
		})
	}
}

// dockerTrue runs n containers of image running true at once.
func dockerTrue(b *testing.B, dockerHost, image string, n int) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := exec.Command("docker", "-H", dockerHost, "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image, "-c", "true").CombinedOutput(); err != nil {
				errs <- fmt.Errorf("docker run: %w: %s", err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// podsTrue creates n Pods of image running true at once, waits until all
// Succeeded, and deletes them.
func (k *kube) podsTrue(b testing.TB, image, instance string, n int) {
	ctx := context.Background()
	// A client of its own, without client-go's 5 requests a second: the 16
	// Pods are created at once, as the runner's do.
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sel := "alfred.instance=" + instance + ",alfred.bench=true"
	w, err := client.CoreV1().Pods(k.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: "0"})
	if err != nil {
		b.Fatalf("watch Pods: %v", err)
	}
	defer w.Stop()
	defer client.CoreV1().Pods(k.namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: sel})
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := client.CoreV1().Pods(k.namespace).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("true-%s-%d", randomSuffix(b), i), Labels: map[string]string{"alfred.instance": instance, "alfred.bench": "true"}},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: new(bool),
					EnableServiceLinks:           new(bool),
					Containers: []corev1.Container{{Name: "true", Image: image, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/sh", "-c", "true"},
						// What the namespace's restricted Pod Security asks.
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65534)), AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						}}},
				},
			}, metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatalf("create Pod: %v", err)
		}
	}
	done := map[string]bool{}
	timeout := time.After(3 * time.Minute)
	for len(done) < n {
		select {
		case ev := <-w.ResultChan():
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				if pod.Status.Phase == corev1.PodFailed {
					b.Fatalf("Pod %s failed: %s", pod.Name, pod.Status.Message)
				}
				if pod.Status.Phase == corev1.PodSucceeded {
					done[pod.Name] = true
				}
			}
		case <-timeout:
			b.Fatalf("%d of %d Pods Succeeded after 3 minutes", len(done), n)
		}
	}
}
