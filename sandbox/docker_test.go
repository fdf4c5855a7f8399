package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// The tests of this file drive a real Docker daemon: the one scripts/dockerd.sh
// starts (eval "$(scripts/dockerd.sh start)"), named by ALFRED_TEST_DOCKER_HOST,
// with the busybox image it imports, named by ALFRED_TEST_IMAGE.

const defaultTestImage = "alfred-test/busybox:latest"

// agentUID is the non-root user of the test image (and of the agent image).
const agentUID = 1000

// dockerEnv returns the test daemon's address and image, or stops the test:
// it fails when they are missing, and skips only under -short.
func dockerEnv(t testing.TB) (host, image string) {
	t.Helper()
	host = os.Getenv("ALFRED_TEST_DOCKER_HOST")
	if host == "" {
		msg := "ALFRED_TEST_DOCKER_HOST is not set: start the test daemon with `eval \"$(scripts/dockerd.sh start)\"` (as root) and run the tests again"
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	image = os.Getenv("ALFRED_TEST_IMAGE")
	if image == "" {
		image = defaultTestImage
	}
	return host, image
}

// testRunner is an image runner with an instance of its own, whose containers
// are checked to be gone when the test ends.
type testRunner struct {
	*ImageRunner
	image string
	api   *client.Client
}

func newTestImageRunner(t testing.TB) *testRunner {
	t.Helper()
	host, image := dockerEnv(t)
	ctx := context.Background()
	instance := "test-" + randomHex(4)
	r, err := NewImageRunner(ctx, ImageOptions{Host: host, Instance: instance, KillGrace: time.Second})
	if err != nil {
		if testing.Short() {
			t.Skipf("Docker daemon unreachable: %v", err)
		}
		t.Fatalf("Docker daemon unreachable (start it with scripts/dockerd.sh start): %v", err)
	}
	api, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.ImageInspect(ctx, image); err != nil {
		t.Fatalf("test image %s is missing (scripts/dockerd.sh start imports it): %v", image, err)
	}
	t.Cleanup(func() {
		if left := instanceContainers(t, api, instance); len(left) > 0 {
			t.Errorf("containers left behind by instance %s: %v", instance, left)
		}
		r.Close()
		api.Close()
	})
	return &testRunner{ImageRunner: r, image: image, api: api}
}

// instanceContainers lists the containers, running or not, of an instance.
func instanceContainers(t testing.TB, api *client.Client, instance string) []string {
	t.Helper()
	list, err := api.ContainerList(context.Background(), container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance)),
	})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, shortID(c.ID))
	}
	return ids
}

// spec returns a Spec running a busybox shell script as the agent user.
func (r *testRunner) spec(script string) Spec {
	return Spec{
		Image: r.image,
		UID:   agentUID,
		GID:   agentUID,
		Argv:  []string{"/bin/sh", "-c", script},
		Env:   map[string]string{"PATH": "/bin"},
	}
}

func (r *testRunner) run(t *testing.T, spec Spec) *Result {
	t.Helper()
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// ownedDir makes a host folder owned by the agent user, for read-write mounts.
func ownedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "owned")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, agentUID, agentUID); err != nil {
		t.Fatalf("chown %s (the tests run as root, like the test daemon): %v", dir, err)
	}
	return dir
}

func TestImageRunnerUserHomeAndSession(t *testing.T) {
	r := newTestImageRunner(t)
	tests := []struct {
		name, session, beside string
	}{
		{"claude-like", "/home/agent/.claude/projects", "/home/agent/.claude/settings.json"},
		{"deep", "/home/agent/.local/share/opencode/storage", "/home/agent/.local/state/opencode.log"},
		{"directly in home", "/home/agent/.codex", "/home/agent/.codex.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sessionHost := ownedDir(t)
			parent := filepath.Dir(tt.session)
			spec := r.spec(`set -e
id -u; id -g; echo "$HOME"
stat -c '%n %u:%g %a' /home/agent "$PARENT"
echo turn >"$SESSION/s.jsonl"
mkdir -p "$(dirname "$BESIDE")"
echo beside >"$BESIDE"
mkdir "$PARENT/new-folder"
echo home >/home/agent/file`)
			spec.Env["SESSION"], spec.Env["PARENT"], spec.Env["BESIDE"] = tt.session, parent, tt.beside
			spec.Session = &Mount{Host: sessionHost, Container: tt.session}
			res := r.run(t, spec)
			if res.Outcome != OutcomeExited || res.ExitCode != 0 {
				t.Fatalf("outcome %s exit %d; stderr: %s", res.Outcome, res.ExitCode, res.Stderr)
			}
			want := "1000\n1000\n/home/agent\n/home/agent 1000:1000 700\n"
			if parent != AgentHome {
				want += parent + " 1000:1000 700\n"
			} else {
				want += "/home/agent 1000:1000 700\n"
			}
			if got := string(res.Stdout); got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			b, err := os.ReadFile(filepath.Join(sessionHost, "s.jsonl"))
			if err != nil || string(b) != "turn\n" {
				t.Errorf("session file on the host: %q, %v", b, err)
			}
		})
	}
}

func TestImageRunnerWorktree(t *testing.T) {
	r := newTestImageRunner(t)
	for _, readOnly := range []bool{true, false} {
		worktree := ownedDir(t)
		if err := os.WriteFile(filepath.Join(worktree, "README"), []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := r.spec(`pwd; cat README; touch /workspace/new && echo wrote`)
		spec.Worktree = &Mount{Host: worktree, Container: WorkspacePath, ReadOnly: readOnly}
		res := r.run(t, spec)
		want, wantCode := "/workspace\nhello\n", 1
		if !readOnly {
			want, wantCode = want+"wrote\n", 0
		}
		if got := string(res.Stdout); got != want || res.ExitCode != wantCode {
			t.Errorf("read-only %v: stdout %q exit %d, want %q exit %d; stderr %s", readOnly, got, res.ExitCode, want, wantCode, res.Stderr)
		}
		_, err := os.Stat(filepath.Join(worktree, "new"))
		if written := err == nil; written == readOnly {
			t.Errorf("read-only %v: file written on the host = %v", readOnly, written)
		}
	}
}

func TestImageRunnerCredentialsReadOnly(t *testing.T) {
	r := newTestImageRunner(t)
	creds := ownedDir(t)
	if err := os.WriteFile(filepath.Join(creds, "token"), []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(creds, "token"), agentUID, agentUID); err != nil {
		t.Fatal(err)
	}
	spec := r.spec(`cat /home/agent/.claude/token
echo x >/home/agent/.claude/token && echo overwrote
touch /home/agent/.claude/new && echo created
true`)
	// ReadOnly false on purpose: credential mounts are read-only whatever it says.
	spec.Credentials = []Mount{{Host: creds, Container: "/home/agent/.claude", ReadOnly: false}}
	res := r.run(t, spec)
	if got := string(res.Stdout); got != "s3cret\n" {
		t.Errorf("stdout = %q, want only the token (no write may succeed); stderr %s", got, res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "Read-only file system") {
		t.Errorf("stderr = %q, want read-only errors", res.Stderr)
	}
}

func TestImageRunnerNetworkNone(t *testing.T) {
	r := newTestImageRunner(t)
	res := r.run(t, r.spec(`ls /sys/class/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; readlink /proc/self/ns/net`))
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != 3 || lines[0] != "lo" || lines[1] != "lo" {
		t.Fatalf("interfaces = %q, want only lo; stderr %s", res.Stdout, res.Stderr)
	}
	// The daemon runs on this machine: the container's namespace is not ours.
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if lines[2] == host {
		t.Fatalf("the container shares the host's network namespace %s", host)
	}
}

func TestImageRunnerNamedNetwork(t *testing.T) {
	r := newTestImageRunner(t)
	ctx := context.Background()
	name := "alfred-test-" + randomHex(4)
	// Internal: no route out, and no iptables needed on the test daemon.
	if _, err := r.api.NetworkCreate(ctx, name, network.CreateOptions{Internal: true}); err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	t.Cleanup(func() { _ = r.api.NetworkRemove(ctx, name) })
	spec := r.spec(`ls /sys/class/net`)
	spec.Network = name
	res := r.run(t, spec)
	if got, want := string(res.Stdout), "eth0\nlo\n"; got != want {
		t.Fatalf("interfaces on network %s = %q, want %q; stderr %s", name, got, want, res.Stderr)
	}
}

func TestImageRunnerConfinement(t *testing.T) {
	r := newTestImageRunner(t)
	spec := r.spec(`grep -E '^(CapEff|NoNewPrivs)' /proc/self/status
cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max
cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes
cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)`)
	spec.PidsLimit = 64
	spec.MemoryBytes = 256 << 20
	spec.NanoCPUs = 500_000_000
	res := r.run(t, spec)
	want := "CapEff:\t0000000000000000\nNoNewPrivs:\t1\n64\n268435456\n50000 100000\n"
	if got := string(res.Stdout); got != want {
		t.Fatalf("confinement = %q, want %q; stderr %s", got, want, res.Stderr)
	}
}

func TestImageRunnerTimeoutKillsAndRemoves(t *testing.T) {
	r := newTestImageRunner(t)
	spec := r.spec(`trap '' TERM; echo started; echo working >&2; while :; do sleep 1; done`)
	spec.Timeout = time.Second
	res := r.run(t, spec)
	if res.Outcome != OutcomeTimeout || res.ExitCode != -1 {
		t.Fatalf("outcome %s exit %d, want timeout -1", res.Outcome, res.ExitCode)
	}
	if string(res.Stdout) != "started\n" || string(res.Stderr) != "working\n" {
		t.Errorf("output so far: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// It ignored SIGTERM, so it lived through the grace period too.
	if res.Duration < spec.Timeout+r.opts.KillGrace {
		t.Errorf("duration %s, want at least timeout %s + grace %s", res.Duration, spec.Timeout, r.opts.KillGrace)
	}
	if left := instanceContainers(t, r.api, r.opts.Instance); len(left) > 0 {
		t.Fatalf("container left after the timeout: %v", left)
	}
}

func TestImageRunnerCancel(t *testing.T) {
	r := newTestImageRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := r.spec(`echo before; exec sleep 300`)
	spec.Stdout = cancelOnWrite(cancel) // cancel once the process runs
	res, err := r.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Outcome != OutcomeCanceled || string(res.Stdout) != "before\n" {
		t.Fatalf("outcome %s stdout %q, want canceled with the output so far", res.Outcome, res.Stdout)
	}
	if left := instanceContainers(t, r.api, r.opts.Instance); len(left) > 0 {
		t.Fatalf("container left after a cancel: %v", left)
	}
}

// cancelOnWrite is a writer that calls cancel at its first write.
type cancelOnWrite context.CancelFunc

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c()
	return len(p), nil
}

func TestImageRunnerStreamsStdinAndExitCode(t *testing.T) {
	r := newTestImageRunner(t)
	var streamed strings.Builder
	spec := r.spec(`echo out; echo err >&2; cat; exit 7`)
	spec.Stdin = strings.NewReader("from stdin\n")
	spec.Stdout = &streamed
	res := r.run(t, spec)
	if got, want := string(res.Stdout), "out\nfrom stdin\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := string(res.Stderr), "err\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if streamed.String() != string(res.Stdout) {
		t.Errorf("streamed stdout %q differs from the result's %q", streamed.String(), res.Stdout)
	}
	if res.Outcome != OutcomeExited || res.ExitCode != 7 {
		t.Errorf("outcome %s exit %d, want exited 7", res.Outcome, res.ExitCode)
	}
}

func TestImageRunnerArgvVerbatim(t *testing.T) {
	r := newTestImageRunner(t)
	args := []string{"$(id)", "`id`", "; rm -rf /tmp", "a b", "*", "'q'", `"d"`, "$HOME", "|", ""}
	spec := r.spec("")
	spec.Argv = append([]string{"printf", `%s\n`}, args...)
	res := r.run(t, spec)
	if got, want := string(res.Stdout), strings.Join(args, "\n")+"\n"; got != want {
		t.Fatalf("printf output = %q, want %q", got, want)
	}
}

func TestImageRunnerEnvironmentAllowlist(t *testing.T) {
	t.Setenv("ALFRED_SECRET_PROBE", "leaked")
	r := newTestImageRunner(t)
	spec := r.spec("")
	spec.Argv = []string{"env"}
	spec.Env = map[string]string{"FOO": "bar", "PATH": "/bin", "HOME": "/elsewhere"}
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
	// HOSTNAME is Docker's; PATH is the Spec's (the image declares one too).
	if got, want := strings.Join(keys, " "), "FOO HOME HOSTNAME PATH"; got != want {
		t.Errorf("variables = %q, want %q", got, want)
	}
	if env["FOO"] != "bar" || env["HOME"] != AgentHome {
		t.Errorf("FOO=%q HOME=%q, want bar and %s", env["FOO"], env["HOME"], AgentHome)
	}
}

func TestImageRunnerCleanupRemovesLeftovers(t *testing.T) {
	r := newTestImageRunner(t)
	ctx := context.Background()
	// Containers a crashed bot left: one of this instance (running), one of
	// another instance that must survive.
	make := func(instance string) string {
		created, err := r.api.ContainerCreate(ctx, &container.Config{
			Image:      r.image,
			Entrypoint: []string{"sleep", "300"},
			Labels:     map[string]string{LabelManaged: "true", LabelInstance: instance, LabelRunner: "crashed"},
		}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			t.Fatalf("create leftover: %v", err)
		}
		if err := r.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			t.Fatalf("start leftover: %v", err)
		}
		return created.ID
	}
	leftover := make(r.opts.Instance)
	otherInstance := "other-" + randomHex(4)
	other := make(otherInstance)
	t.Cleanup(func() {
		_ = r.api.ContainerRemove(ctx, other, container.RemoveOptions{Force: true})
	})

	// The next start of the bot: a new runner of the same instance.
	host, _ := dockerEnv(t)
	next, err := NewImageRunner(ctx, ImageOptions{Host: host, Instance: r.opts.Instance})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	removed, err := next.Cleanup(ctx)
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if removed != 1 {
		t.Errorf("Cleanup removed %d containers, want 1", removed)
	}
	if _, err := r.api.ContainerInspect(ctx, leftover); err == nil {
		t.Errorf("leftover %s still exists", shortID(leftover))
	}
	if _, err := r.api.ContainerInspect(ctx, other); err != nil {
		t.Errorf("the other instance's container was touched: %v", err)
	}
}

func TestImageRunnerRefuses(t *testing.T) {
	r := newTestImageRunner(t)
	session := &Mount{Host: "/tmp", Container: "/home/agent/.claude/projects"}
	tests := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"root user", func(s *Spec) { s.UID = 0 }, "must not be root"},
		{"root group", func(s *Spec) { s.GID = 0 }, "must not be root"},
		{"no image", func(s *Spec) { s.Image = "" }, "no image"},
		{"missing image", func(s *Spec) { s.Image = "alfred-test/no-such-image:latest" }, "is not on the daemon"},
		{"session outside home", func(s *Spec) { s.Session = &Mount{Host: "/tmp", Container: "/var/state"} }, "is not under /home/agent"},
		{"session under a credential", func(s *Spec) {
			s.Session = session
			s.Credentials = []Mount{{Host: "/tmp", Container: "/home/agent/.claude"}}
		}, "overlaps credential mount"},
		{"credential hides home", func(s *Spec) { s.Credentials = []Mount{{Host: "/tmp", Container: "/home"}} }, "would hide /home/agent"},
		{"worktree elsewhere", func(s *Spec) { s.Worktree = &Mount{Host: "/tmp", Container: "/src"} }, "mounted at /workspace"},
		{"relative host path", func(s *Spec) { s.Worktree = &Mount{Host: "tmp"} }, "is not absolute"},
		{"tmpfs twice", func(s *Spec) { s.Tmpfs = []Tmpfs{{Path: "/home/agent"}} }, "both mounted at /home/agent"},
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

func TestNewImageRunnerUnreachableDaemon(t *testing.T) {
	_, err := NewImageRunner(context.Background(), ImageOptions{Host: "unix:///nonexistent/alfred/docker.sock"})
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "/nonexistent/alfred/docker.sock") {
		t.Fatalf("NewImageRunner error = %v, want a clear unreachable-daemon error naming the address", err)
	}
}
