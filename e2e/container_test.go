package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/internal/dockertest"
)

// The user of the bot image and of the agent image (ALFRED_AGENT_USER's
// default): the data folder is handed to it.
const (
	deployUID = 1000
	deployGID = 1000
)

// testLabel marks every container TestE2EDeployed starts itself (the bot and
// its one-off commands), so the cleanup finds them. It is not the image
// runner's alfred.instance, which the bot removes as leftovers at start.
const testLabel = "alfred.e2e.instance"

// dockerCLI runs the docker CLI against the private daemon.
type dockerCLI = dockertest.CLI

// botContainer is alfred of the built bot image, run the way deploy/compose.yaml
// runs it: the daemon's socket mounted with its group, the data folder at the
// same path inside as on the host (the state repository inside it, so the
// test reads the state branch from the host), listening on loopback of the
// host's network, where the forge fake and the mock model are.
type botContainer struct {
	t        testing.TB
	d        dockerCLI
	image    string
	name     string
	instance string
	addr     string
	data     string
	state    string
	common   []string // docker run options of every container of the bot
}

// newBotContainer prepares the data folder and the options; nothing runs yet.
// Its cleanup removes every container of the test, and fails the test when one
// cannot be removed.
func newBotContainer(t testing.TB, d dockerCLI, image, instance string, env []string) *botContainer {
	t.Helper()
	sock, ok := strings.CutPrefix(d.Host, "unix://")
	if !ok {
		t.Fatalf("ALFRED_TEST_DOCKER_HOST = %q: the bot's container needs a unix socket to mount", d.Host)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatalf("the private daemon's socket: %v", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner for %s", sock)
	}
	data := t.TempDir()
	if err := os.Chown(data, deployUID, deployGID); err != nil {
		t.Fatalf("hand the data folder to %d:%d: %v", deployUID, deployGID, err)
	}
	b := &botContainer{
		t: t, d: d, image: image, name: "alfred-e2e-bot-" + instance, instance: instance,
		addr: freeAddr(t), data: data, state: filepath.Join(data, "state.git"),
	}
	b.common = []string{
		"--network", "host",
		"--label", testLabel + "=" + instance,
		"-v", sock + ":/var/run/docker.sock",
		"--group-add", strconv.FormatUint(uint64(st.Gid), 10),
		"-v", data + ":" + data,
	}
	for _, kv := range append([]string{
		"ALFRED_LISTEN=" + b.addr, "ALFRED_PUBLIC_URL=http://" + b.addr,
		"ALFRED_DATA_DIR=" + data, "ALFRED_STATE_DIR=" + b.state,
		"ALFRED_DOCKER_HOST=unix:///var/run/docker.sock", "ALFRED_INSTANCE=" + instance,
	}, env...) {
		b.common = append(b.common, "-e", kv)
	}
	t.Cleanup(b.removeAll)
	return b
}

// view is the bot as the scenario's helpers read it: its address, its data
// folder and its state repository on the host.
func (b *botContainer) view() *bot {
	return &bot{t: b.t, addr: b.addr, state: b.state, data: b.data}
}

// run runs one alfred subcommand in a throwaway container of the image.
func (b *botContainer) run(args ...string) string {
	b.t.Helper()
	opts := append([]string{"run", "--rm"}, b.common...)
	out, err := b.d.Run(append(append(opts, b.image), args...)...)
	if err != nil {
		b.t.Fatalf("alfred %v in %s: %v", args, b.image, err)
	}
	return out
}

// serve starts alfred serve detached, with the image's health check probed
// every second (the image's own command, at a pace a test can wait for), and
// waits until it is ready.
func (b *botContainer) serve() {
	b.t.Helper()
	opts := append([]string{"run", "-d", "--name", b.name,
		"--health-interval", "1s", "--health-timeout", "5s", "--health-retries", "3"}, b.common...)
	b.d.Must(b.t, append(opts, b.image)...)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + b.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if status := b.inspect("{{.State.Status}}"); status != "running" && status != "created" {
			b.t.Fatalf("the bot's container is %s (exit code %s) before it was ready", status, b.inspect("{{.State.ExitCode}}"))
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for alfred serve ready in its container on %s", b.addr)
		}
	}
}

// inspect reads one field of the bot's container (a docker inspect format).
func (b *botContainer) inspect(format string) string {
	b.t.Helper()
	return strings.TrimSpace(b.d.Must(b.t, "inspect", "--format", format, b.name))
}

// waitHealthy waits until Docker calls the bot's container healthy.
func (b *botContainer) waitHealthy() {
	b.t.Helper()
	var status string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		status = b.inspect("{{if .State.Health}}{{.State.Health.Status}}{{end}}")
		if status == "healthy" {
			return
		}
		if status == "" {
			b.t.Fatalf("%s has no health check (the image's HEALTHCHECK is missing)", b.image)
		}
		if status == "unhealthy" || time.Now().After(deadline) {
			break
		}
	}
	b.t.Fatalf("health status of the bot's container %q; want healthy; log: %s", status, b.inspect("{{json .State.Health.Log}}"))
}

// stop stops the bot as docker stop does (SIGTERM) and checks it ended cleanly.
func (b *botContainer) stop() {
	b.t.Helper()
	b.d.Must(b.t, "stop", "-t", "30", b.name)
	if code := b.inspect("{{.State.ExitCode}}"); code != "0" {
		b.t.Errorf("the bot's exit code after docker stop = %s; want 0 (a clean shutdown on SIGTERM)", code)
	}
}

// removeAll shows the bot's log when the test failed, removes every container
// of the test and of the bot's instance, and checks none is left.
func (b *botContainer) removeAll() {
	if b.t.Failed() {
		out, err := exec.Command("docker", "-H", b.d.Host, "logs", b.name).CombinedOutput()
		b.t.Logf("log of the bot's container %s (%v):\n%s", b.name, err, out)
	}
	labels := []string{testLabel + "=" + b.instance, "alfred.instance=" + b.instance}
	for _, label := range labels {
		ids, err := b.d.Labelled(label)
		if err != nil {
			b.t.Errorf("list the containers of %s: %v", label, err)
			continue
		}
		if len(ids) > 0 {
			if _, err := b.d.Run(append([]string{"rm", "-f"}, ids...)...); err != nil {
				b.t.Errorf("remove the containers of %s: %v", label, err)
			}
		}
	}
	for _, label := range labels {
		if ids, err := b.d.Labelled(label); err != nil || len(ids) > 0 {
			b.t.Errorf("containers of %s left after the cleanup: %v %v", label, ids, err)
		}
	}
}
