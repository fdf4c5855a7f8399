package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The contract of the Docker runner (sandbox/docker_test.go), for the
// Kubernetes runner, against the test cluster.

func TestRunnerUserHomeAndSession(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	tests := []struct {
		name, session, beside string
	}{
		{"claude-like", "/home/agent/.claude/projects", "/home/agent/.claude/settings.json"},
		{"deep", "/home/agent/.local/share/opencode/storage", "/home/agent/.local/state/opencode.log"},
		{"directly in home", "/home/agent/.codex", "/home/agent/.codex.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sessionHost := ownedDir(t)
			// The last run's state: one file read, one the agent deletes.
			writeFile(t, filepath.Join(sessionHost, "old.jsonl"), "earlier turn\n")
			writeFile(t, filepath.Join(sessionHost, "stale.lock"), "x")
			parent := filepath.Dir(tt.session)
			spec := r.spec(`set -e
id -u; id -g; echo "$HOME"
stat -c '%n %u:%g %a' /home/agent "$PARENT"
cat "$SESSION/old.jsonl"
rm "$SESSION/stale.lock"
echo turn >"$SESSION/s.jsonl"
mkdir -p "$SESSION/sub" && echo deep >"$SESSION/sub/t.json"
mkdir -p "$(dirname "$BESIDE")"
echo beside >"$BESIDE"
mkdir "$PARENT/new-folder"
echo home >/home/agent/file`)
			spec.Env["SESSION"], spec.Env["PARENT"], spec.Env["BESIDE"] = tt.session, parent, tt.beside
			spec.Session = &sandbox.Mount{Host: sessionHost, Container: tt.session}
			res := r.run(t, spec)
			if res.Outcome != sandbox.OutcomeExited || res.ExitCode != 0 {
				t.Fatalf("outcome %s exit %d; stderr: %s", res.Outcome, res.ExitCode, res.Stderr)
			}
			want := "1000\n1000\n/home/agent\n/home/agent 1000:1000 700\n"
			if parent != sandbox.AgentHome {
				want += parent + " 1000:1000 700\n"
			} else {
				want += "/home/agent 1000:1000 700\n"
			}
			want += "earlier turn\n"
			if got := string(res.Stdout); got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			for name, content := range map[string]string{"s.jsonl": "turn\n", "sub/t.json": "deep\n", "old.jsonl": "earlier turn\n"} {
				if b, err := os.ReadFile(filepath.Join(sessionHost, name)); err != nil || string(b) != content {
					t.Errorf("session file %s on the host: %q, %v", name, b, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(sessionHost, "stale.lock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the file the agent deleted is still on the host: %v", err)
			}
		})
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(name, agentUID, agentUID); err != nil {
		t.Fatal(err)
	}
}

func TestRunnerWorktreeReadOnly(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	worktree := ownedDir(t)
	writeFile(t, filepath.Join(worktree, "README"), "hello\n")
	spec := r.spec(`pwd; cat README; touch /workspace/new && echo wrote; echo x >README && echo overwrote; true`)
	spec.Worktree = &sandbox.Mount{Host: worktree, Container: sandbox.WorkspacePath, ReadOnly: true}
	res := r.run(t, spec)
	if got, want := string(res.Stdout), "/workspace\nhello\n"; got != want {
		t.Errorf("stdout %q, want %q (no write may succeed); stderr %s", got, want, res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "Read-only file system") {
		t.Errorf("stderr = %q, want read-only errors", res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(worktree, "new")); err == nil {
		t.Error("a file was written on the host through a read-only worktree")
	}
	if b, _ := os.ReadFile(filepath.Join(worktree, "README")); string(b) != "hello\n" {
		t.Errorf("README on the host = %q", b)
	}
}

func TestRunnerWorktreeReadWrite(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	worktree := ownedDir(t)
	outside := t.TempDir() // must stay empty
	writeFile(t, filepath.Join(worktree, "README"), "hello\n")
	writeFile(t, filepath.Join(worktree, "gone.txt"), "delete me\n")
	writeFile(t, filepath.Join(worktree, "olddir/inner.txt"), "and me\n")
	writeFile(t, filepath.Join(worktree, "src/keep.go"), "package keep\n")
	if err := os.Symlink("README", filepath.Join(worktree, "link-in")); err != nil {
		t.Fatal(err)
	}
	spec := r.spec(`set -e
pwd; cat README; test -L link-in && cat link-in
echo changed >README
rm gone.txt; rm -r olddir
echo new >new.txt; mkdir -p a/b; echo deep >a/b/c.txt
printf '#!/bin/sh\n' >run.sh; chmod 0751 run.sh
ln -s "$OUTSIDE" escape
ln -s "$OUTSIDE/planted" escape-file
echo inside >"$OUTSIDE-not-host" 2>/dev/null || true`)
	spec.Env["OUTSIDE"] = outside
	spec.Worktree = &sandbox.Mount{Host: worktree, Container: sandbox.WorkspacePath}
	res := r.run(t, spec)
	if got, want := string(res.Stdout), "/workspace\nhello\nhello\n"; got != want || res.ExitCode != 0 {
		t.Fatalf("stdout %q exit %d, want %q exit 0; stderr %s", got, res.ExitCode, want, res.Stderr)
	}
	for name, content := range map[string]string{"README": "changed\n", "new.txt": "new\n", "a/b/c.txt": "deep\n", "src/keep.go": "package keep\n"} {
		if b, err := os.ReadFile(filepath.Join(worktree, name)); err != nil || string(b) != content {
			t.Errorf("%s on the host: %q, %v; want %q", name, b, err, content)
		}
	}
	for _, name := range []string{"gone.txt", "olddir"} {
		if _, err := os.Lstat(filepath.Join(worktree, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, deleted by the agent, is still on the host: %v", name, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(worktree, "run.sh")); err != nil || fi.Mode().Perm() != 0o751 {
		t.Errorf("run.sh mode: %v, %v; want 0751", fi, err)
	}
	for link, target := range map[string]string{"escape": outside, "escape-file": outside + "/planted", "link-in": "README"} {
		if got, err := os.Readlink(filepath.Join(worktree, link)); err != nil || got != target {
			t.Errorf("symlink %s on the host: %q, %v; want one to %q", link, got, err, target)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("something was written outside the worktree: %v", entries)
	}
	if fi, err := os.Stat(filepath.Join(worktree, "new.txt")); err == nil {
		if st := fileOwner(fi); st != agentUID {
			t.Errorf("new.txt is owned by %d on the host, want the agent's user %d", st, agentUID)
		}
	}
}

func TestRunnerCredentialsReadOnly(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	creds := ownedDir(t)
	writeFile(t, filepath.Join(creds, "token"), "s3cret\n")
	writeFile(t, filepath.Join(creds, "nested/config.json"), "{}\n")
	file := filepath.Join(t.TempDir(), "auth.json")
	writeFile(t, file, "auth\n")
	spec := r.spec(`cat /home/agent/.claude/token /home/agent/.claude/nested/config.json /home/agent/.codex/auth.json
stat -L -c '%a' /home/agent/.claude/token
echo x >/home/agent/.claude/token && echo overwrote
touch /home/agent/.claude/new && echo created
echo x >/home/agent/.codex/auth.json && echo overwrote file
touch /home/agent/.codex/sessions && echo beside the file
true`)
	// ReadOnly false on purpose: credential mounts are read-only whatever it says.
	spec.Credentials = []sandbox.Mount{
		{Host: creds, Container: "/home/agent/.claude", ReadOnly: false},
		{Host: file, Container: "/home/agent/.codex/auth.json"},
	}
	res := r.run(t, spec)
	if got, want := string(res.Stdout), "s3cret\n{}\nauth\n444\nbeside the file\n"; got != want {
		t.Errorf("stdout = %q, want %q (no write to a credential may succeed); stderr %s", got, want, res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "Read-only file system") {
		t.Errorf("stderr = %q, want read-only errors", res.Stderr)
	}
}

func TestRunnerNetwork(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"", "none", "pod"} {
		t.Run("network="+network, func(t *testing.T) {
			t.Parallel()
			r := newTestRunner(t)
			var policies []string
			spec := r.spec(`echo up; ls /sys/class/net`)
			spec.Network = network
			spec.Stdout = onFirstWrite(func() {
				// This checks the policy exists and selects the Pod;
				// that its traffic is dropped is TestSealedRunHasNoNetwork's
				// (the suite's cluster enforces policies with kube-router).
				policies = r.runPolicies(t)
			})
			res := r.run(t, spec)
			if !strings.Contains(string(res.Stdout), "lo\n") {
				t.Errorf("stdout %q; stderr %s", res.Stdout, res.Stderr)
			}
			want := 1
			if network == "pod" {
				want = 0
			}
			if len(policies) != want {
				t.Errorf("NetworkPolicies while the run ran: %v, want %d denying all", policies, want)
			}
		})
	}
}

// TestSealedPolicyPutBack: the standing NetworkPolicy of the sealed runs,
// changed to let traffic through and to select nothing, is put back before
// the next sealed Pod exists; a Spec label cannot unseal a sealed run nor
// seal an unsealed one.
func TestSealedPolicyPutBack(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	ctx := context.Background()
	if err := r.ensureSealed(ctx); err != nil {
		t.Fatal(err)
	}
	api := r.c.client.NetworkingV1().NetworkPolicies(r.c.namespace)
	np, err := api.Get(ctx, SealedPolicyName(r.opts.Instance), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} // all egress allowed
	np.Spec.PodSelector.MatchLabels = map[string]string{"nothing": "here"}
	if _, err := api.Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"none", "pod"} {
		var policies []string
		spec := r.spec(`echo up`)
		spec.Network = network
		spec.Labels = map[string]string{LabelSealed: map[string]string{"none": "false", "pod": "true"}[network]}
		spec.Stdout = onFirstWrite(func() { policies = r.runPolicies(t) })
		r.run(t, spec)
		if want := map[string]int{"none": 1, "pod": 0}[network]; len(policies) != want {
			t.Errorf("network %s: NetworkPolicies selecting the Pod: %v, want %d denying all", network, policies, want)
		}
	}
}

// runPolicies names the NetworkPolicies of the runner's instance that select
// its one running Pod, checking that each denies it all traffic.
func (r *testRunner) runPolicies(t *testing.T) []string {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{LabelInstance: r.opts.Instance}).String()}
	list, err := r.c.client.NetworkingV1().NetworkPolicies(r.c.namespace).List(ctx, sel)
	if err != nil {
		t.Errorf("list NetworkPolicies: %v", err)
		return nil
	}
	pods, err := r.c.client.CoreV1().Pods(r.c.namespace).List(ctx, sel)
	if err != nil || len(pods.Items) != 1 {
		t.Errorf("the instance's Pods: %v, %v; want one", pods, err)
		return nil
	}
	var out []string
	for _, np := range list.Items {
		s := np.Spec
		chosen, err := metav1.LabelSelectorAsSelector(&s.PodSelector)
		if err != nil {
			t.Errorf("NetworkPolicy %s: %v", np.Name, err)
			continue
		}
		if !chosen.Matches(labels.Set(pods.Items[0].Labels)) {
			continue
		}
		if len(s.Ingress) > 0 || len(s.Egress) > 0 || len(s.PolicyTypes) != 2 {
			t.Errorf("NetworkPolicy %s does not deny all traffic: %+v", np.Name, s)
		}
		out = append(out, np.Name)
	}
	return out
}

// onFirstWrite is a writer that calls f at its first write.
func onFirstWrite(f func()) *firstWrite { return &firstWrite{then: f} }

type firstWrite struct {
	once sync.Once
	then func()
	at   time.Time
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() {
		w.at = time.Now()
		if w.then != nil {
			w.then()
		}
	})
	return len(p), nil
}

func TestRunnerConfinement(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	var pod *corev1.Pod
	spec := r.spec(`grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status
ls /var/run/secrets/kubernetes.io 2>&1 || echo no token
cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes
cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)`)
	spec.MemoryBytes = 256 << 20
	spec.NanoCPUs = 500_000_000
	spec.Stdout = onFirstWrite(func() { pod = r.onlyPod(t) })
	res := r.run(t, spec)
	out := string(res.Stdout)
	for _, want := range []string{"CapEff:\t0000000000000000\n", "NoNewPrivs:\t1\n", "Seccomp:\t2\n", "no token\n", "268435456\n", "50000 100000\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("confinement output %q lacks %q; stderr %s", out, want, res.Stderr)
		}
	}
	if pod == nil {
		t.Fatal("no Pod seen while the run ran")
	}
	ps := pod.Spec
	if *ps.AutomountServiceAccountToken || *ps.EnableServiceLinks || !*ps.ShareProcessNamespace || ps.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("Pod spec: automount %v serviceLinks %v shareProcessNamespace %v restart %s", *ps.AutomountServiceAccountToken, *ps.EnableServiceLinks, *ps.ShareProcessNamespace, ps.RestartPolicy)
	}
	if sc := ps.SecurityContext; !*sc.RunAsNonRoot || *sc.RunAsUser != agentUID || *sc.RunAsGroup != agentUID || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("Pod security context %+v", sc)
	}
	for _, c := range append(ps.InitContainers, ps.Containers...) {
		sc := c.SecurityContext
		if !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s security context %+v", c.Name, sc)
		}
	}
	for _, l := range []string{LabelManaged, LabelInstance, LabelRunner, LabelPod} {
		if pod.Labels[l] == "" {
			t.Errorf("Pod lacks label %s: %v", l, pod.Labels)
		}
	}
}

// onlyPod returns the runner's one Pod.
func (r *testRunner) onlyPod(t *testing.T) *corev1.Pod {
	sel := labels.SelectorFromSet(labels.Set{LabelInstance: r.opts.Instance}).String()
	list, err := r.c.client.CoreV1().Pods(r.c.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("Pods of the runner: %v, %v; want one", list, err)
		return nil
	}
	return &list.Items[0]
}

func TestRunnerTimeoutKillsAndDeletes(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	spec := r.spec(`trap '' TERM; echo started; echo working >&2; while :; do sleep 1; done`)
	spec.Timeout = 2 * time.Second
	res := r.run(t, spec)
	if res.Outcome != sandbox.OutcomeTimeout || res.ExitCode != -1 {
		t.Fatalf("outcome %s exit %d, want timeout -1", res.Outcome, res.ExitCode)
	}
	if string(res.Stdout) != "started\n" || string(res.Stderr) != "working\n" {
		t.Errorf("output so far: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// It ignored SIGTERM, so it lived through the grace period too.
	if res.Duration < spec.Timeout+r.opts.KillGrace {
		t.Errorf("duration %s, want at least timeout %s + grace %s", res.Duration, spec.Timeout, r.opts.KillGrace)
	}
	if left := instanceObjects(t, r.c, r.opts.Instance); len(left) > 0 {
		t.Fatalf("objects left after the timeout: %v", left)
	}
}

func TestRunnerCancel(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := r.spec(`echo before; exec sleep 300`)
	spec.Stdout = onFirstWrite(cancel) // cancel once the process runs
	res, err := r.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Outcome != sandbox.OutcomeCanceled || res.ExitCode != -1 || string(res.Stdout) != "before\n" {
		t.Fatalf("outcome %s exit %d stdout %q, want canceled -1 with the output so far", res.Outcome, res.ExitCode, res.Stdout)
	}
	if left := instanceObjects(t, r.c, r.opts.Instance); len(left) > 0 {
		t.Fatalf("objects left after a cancel: %v", left)
	}
}

func TestRunnerStreamsStdinAndExitCode(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	var streamed, streamedErr strings.Builder
	spec := r.spec(`echo out; echo err >&2; cat; exit 7`)
	spec.Stdin = strings.NewReader("from stdin\n")
	spec.Stdout, spec.Stderr = &streamed, &streamedErr
	res := r.run(t, spec)
	if got, want := string(res.Stdout), "out\nfrom stdin\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := string(res.Stderr), "err\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if streamed.String() != string(res.Stdout) || streamedErr.String() != string(res.Stderr) {
		t.Errorf("streamed %q / %q differ from the result's %q / %q", streamed.String(), streamedErr.String(), res.Stdout, res.Stderr)
	}
	if res.Outcome != sandbox.OutcomeExited || res.ExitCode != 7 {
		t.Errorf("outcome %s exit %d, want exited 7", res.Outcome, res.ExitCode)
	}
}

func TestRunnerStreamsAsItComes(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	first := onFirstWrite(nil)
	spec := r.spec(`echo first; sleep 3; echo second`)
	spec.Stdout = first
	res := r.run(t, spec)
	end := res.Started.Add(res.Duration)
	if first.at.IsZero() || end.Sub(first.at) < 2*time.Second {
		t.Errorf("first write at %s, the run ended at %s: the output was not streamed as it came", first.at, end)
	}
	if string(res.Stdout) != "first\nsecond\n" {
		t.Errorf("stdout = %q", res.Stdout)
	}
}

func TestRunnerArgvVerbatim(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	args := []string{"$(id)", "`id`", "; rm -rf /tmp", "a b", "*", "'q'", `"d"`, "$HOME", "$(HOME)", "$$(HOME)", "|", "", "two\nlines"}
	spec := r.spec("")
	spec.Argv = append([]string{"printf", `%s\n`}, args...)
	res := r.run(t, spec)
	if got, want := string(res.Stdout), strings.Join(args, "\n")+"\n"; got != want {
		t.Fatalf("printf output = %q, want %q; stderr %s", got, want, res.Stderr)
	}
}

func TestRunnerEnvironmentAllowlist(t *testing.T) {
	t.Setenv("ALFRED_SECRET_PROBE", "leaked")
	r := newTestRunner(t)
	spec := r.spec("")
	spec.Argv = []string{"env"}
	spec.Env = map[string]string{"FOO": "bar $(HOME) $$", "PATH": "/bin", "HOME": "/elsewhere"}
	res := r.run(t, spec)
	if strings.Contains(string(res.Stdout), "ALFRED_SECRET_PROBE") {
		t.Fatalf("the bot's own variable reached the container: %s", res.Stdout)
	}
	var keys []string
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		keys = append(keys, k)
		env[k] = v
	}
	sort.Strings(keys)
	// HOSTNAME is the runtime's (as Docker's); the kubelet's KUBERNETES_*
	// and the wrapper shell's SHLVL and PWD are removed.
	if got, want := strings.Join(keys, " "), "FOO HOME HOSTNAME PATH"; got != want {
		t.Errorf("variables = %q, want %q", got, want)
	}
	if env["FOO"] != "bar $(HOME) $$" || env["HOME"] != sandbox.AgentHome {
		t.Errorf("FOO=%q HOME=%q, want %q and %s", env["FOO"], env["HOME"], "bar $(HOME) $$", sandbox.AgentHome)
	}
}

func TestRunnerRunningCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		argv   []string
		noSuch bool // the image does not exist
		during int  // Running() at the process's first output; -1: it writes none
		cancel bool // the run is canceled at its first output
	}{
		{name: "ends by itself", argv: []string{"/bin/sh", "-c", "echo up"}, during: 1},
		{name: "canceled", argv: []string{"/bin/sh", "-c", "echo up; exec sleep 300"}, during: 1, cancel: true},
		{name: "fails", argv: []string{"/bin/sh", "-c", "echo up; exit 3"}, during: 1},
		{name: "never starts", argv: []string{"true"}, noSuch: true, during: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRunner(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := r.spec("")
			spec.Argv = tc.argv
			if tc.noSuch {
				spec.Image = "alfred-test/no-such-image:latest"
			}
			during := -1
			spec.Stdout = onFirstWrite(func() {
				during = r.Running()
				if tc.cancel {
					cancel()
				}
			})
			_, err := r.Run(ctx, spec)
			if (err != nil) != tc.noSuch {
				t.Fatalf("Run: %v", err)
			}
			if during != tc.during {
				t.Errorf("while the process ran: %d, want %d", during, tc.during)
			}
			if got := r.Running(); got != 0 {
				t.Errorf("after the run: %d, want 0", got)
			}
		})
	}
}

func TestRunnerMissingImage(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	spec := r.spec("true")
	spec.Image = "alfred-test/no-such-image:latest"
	t0 := time.Now()
	_, err := r.Run(context.Background(), spec)
	took := time.Since(t0)
	if err == nil || !strings.Contains(err.Error(), "ErrImageNeverPull") {
		t.Fatalf("Run error = %v, want one naming ErrImageNeverPull", err)
	}
	if took > r.opts.StartTimeout/2 {
		t.Errorf("the error took %s, want it well before the start deadline %s", took, r.opts.StartTimeout)
	}
	t.Logf("missing image reported after %s: %v", took.Round(time.Millisecond), err)
	if left := instanceObjects(t, r.c, r.opts.Instance); len(left) > 0 {
		t.Fatalf("objects left after a missing image: %v", left)
	}
}

func TestRunnerRefuses(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	session := &sandbox.Mount{Host: "/tmp", Container: "/home/agent/.claude/projects"}
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name string
		edit func(*sandbox.Spec)
		want string
	}{
		{"root user", func(s *sandbox.Spec) { s.UID = 0 }, "must not be root"},
		{"root group", func(s *sandbox.Spec) { s.GID = 0 }, "must not be root"},
		{"no image", func(s *sandbox.Spec) { s.Image = "" }, "no image"},
		{"bind of a folder", func(s *sandbox.Spec) {
			s.Binds = []sandbox.Mount{{Host: t.TempDir(), Container: "/run/alfred/d"}}
		}, "only a file or a unix socket can be carried into a Pod"},
		{"bind of nothing", func(s *sandbox.Spec) {
			s.Binds = []sandbox.Mount{{Host: missing, Container: "/run/alfred/s.sock"}}
		}, "kube: bind " + missing},
		{"bind at the root", func(s *sandbox.Spec) {
			s.Binds = []sandbox.Mount{{Host: "/etc/hostname", Container: "/hostname"}}
		}, "its folder / cannot be a volume"},
		{"unknown network", func(s *sandbox.Spec) { s.Network = "bridge" }, `unknown network "bridge": the Kubernetes runner knows "none"`},
		{"kubelet variable", func(s *sandbox.Spec) { s.Env["KUBERNETES_SERVICE_HOST"] = "x" }, "is reserved"},
		{"session outside home", func(s *sandbox.Spec) { s.Session = &sandbox.Mount{Host: "/tmp", Container: "/var/state"} }, "is not under /home/agent"},
		{"session under a credential", func(s *sandbox.Spec) {
			s.Session = session
			s.Credentials = []sandbox.Mount{{Host: "/tmp", Container: "/home/agent/.claude"}}
		}, "overlaps credential mount"},
		{"credential hides home", func(s *sandbox.Spec) { s.Credentials = []sandbox.Mount{{Host: "/tmp", Container: "/home"}} }, "would hide /home/agent"},
		{"worktree elsewhere", func(s *sandbox.Spec) { s.Worktree = &sandbox.Mount{Host: "/tmp", Container: "/src"} }, "mounted at /workspace"},
		{"relative host path", func(s *sandbox.Spec) { s.Worktree = &sandbox.Mount{Host: "tmp"} }, "is not absolute"},
		{"missing worktree", func(s *sandbox.Spec) { s.Worktree = &sandbox.Mount{Host: missing} }, "worktree host folder " + missing},
		{"tmpfs twice", func(s *sandbox.Spec) { s.Tmpfs = []sandbox.Tmpfs{{Path: "/home/agent"}} }, "both mounted at /home/agent"},
		{"credentials too big", func(s *sandbox.Spec) {
			big := filepath.Join(t.TempDir(), "big")
			if err := os.WriteFile(big, make([]byte, 1<<20), 0o600); err != nil {
				t.Fatal(err)
			}
			s.Credentials = []sandbox.Mount{{Host: big, Container: "/home/agent/.big"}}
		}, "more than the 900 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := r.spec("true")
			tt.edit(&spec)
			_, err := r.Run(context.Background(), spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestNewMissingNamespace(t *testing.T) {
	t.Parallel()
	clusterEnv(t)
	_, err := New(context.Background(), Options{Kubeconfig: os.Getenv("ALFRED_TEST_KUBECONFIG"), Namespace: "alfred-no-such-namespace"})
	if err == nil || !strings.Contains(err.Error(), "alfred-no-such-namespace") || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("New error = %v, want one naming the server and the namespace", err)
	}
}

// TestRunnerTimeoutLetsTheAgentEnd: at the timeout the agent gets SIGTERM
// and the grace period to end as it chooses; the wrapper around it does not
// end the container first.
func TestRunnerTimeoutLetsTheAgentEnd(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	spec := r.spec(`trap 'sleep 0.5; echo saved; exit 0' TERM; echo started; while :; do sleep 0.1; done`)
	spec.Timeout = 2 * time.Second
	res := r.run(t, spec)
	if res.Outcome != sandbox.OutcomeTimeout {
		t.Errorf("outcome %s, want timeout", res.Outcome)
	}
	if string(res.Stdout) != "started\nsaved\n" {
		t.Errorf("stdout %q, want the agent's own end after SIGTERM", res.Stdout)
	}
}
