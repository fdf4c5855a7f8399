package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/internal/dockertest"
)

// Variables the suite's scripts set (scripts/test.sh runs them before go test).
const (
	envDockerHost = "ALFRED_TEST_DOCKER_HOST" // scripts/dockerd.sh start
	envBotImage   = "ALFRED_TEST_BOT_IMAGE"   // scripts/images.sh
	envBotVersion = "ALFRED_TEST_BOT_VERSION" // scripts/images.sh
	envAgentImage = "ALFRED_TEST_AGENT_IMAGE" // scripts/images.sh
)

var setBy = map[string]string{
	envDockerHost: "scripts/dockerd.sh start",
	envBotImage:   "scripts/images.sh",
	envBotVersion: "scripts/images.sh",
	envAgentImage: "scripts/images.sh",
}

// repoRoot is the repository, seen from this package's folder.
const repoRoot = ".."

// need returns the variable name, which a script of the suite sets. Unset, the
// test fails naming the script; under -short it is skipped instead, since what
// it checks needs the Docker daemon and the built images.
func need(t *testing.T, name string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	if testing.Short() {
		t.Skipf("-short: %s is unset; this test needs the Docker daemon and the images (%s sets it)", name, setBy[name])
	}
	t.Fatalf("%s is unset: run %s first, as scripts/test.sh does", name, setBy[name])
	return ""
}

// dockerCLI runs the docker CLI against the suite's daemon.
type dockerCLI struct{ dockertest.CLI }

func newDocker(t *testing.T) dockerCLI {
	t.Helper()
	host := need(t, envDockerHost)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the docker CLI is missing (Debian's docker.io, which scripts/dockerd.sh installs): %v", err)
	}
	return dockerCLI{dockertest.CLI{Host: host}}
}

// imageConfig is the part of `docker image inspect` the tests read.
type imageConfig struct {
	User        string
	Env         []string
	Entrypoint  []string
	Labels      map[string]string
	Healthcheck *struct{ Test []string }
}

func (d dockerCLI) imageConfig(t *testing.T, image string) imageConfig {
	t.Helper()
	var c imageConfig
	out := d.Must(t, "image", "inspect", "--format", "{{json .Config}}", image)
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("decode the config of %s: %v\n%s", image, err, out)
	}
	return c
}

// filesNamed lists, as root in a throwaway container of image, the regular
// files of its root filesystem whose name matches one of the find -name
// patterns.
func (d dockerCLI) filesNamed(t *testing.T, image string, patterns ...string) []string {
	t.Helper()
	expr := []string{"/", "-xdev", "-type", "f", "("}
	for i, p := range patterns {
		if i > 0 {
			expr = append(expr, "-o")
		}
		expr = append(expr, "-name", p)
	}
	expr = append(expr, ")")
	args := append([]string{"run", "--rm", "--network", "none", "--user", "0", "--entrypoint", "find", image}, expr...)
	return strings.Fields(d.Must(t, args...))
}

// repo is the repository part of an image reference (name:tag).
func repo(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

var alfred struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// alfredBinary builds the alfred command once for the package's tests.
func alfredBinary(t *testing.T) string {
	t.Helper()
	alfred.once.Do(func() {
		alfred.dir, alfred.err = os.MkdirTemp("", "alfred-deploy-test-")
		if alfred.err != nil {
			return
		}
		alfred.path = filepath.Join(alfred.dir, "alfred")
		cmd := exec.Command("go", "build", "-o", alfred.path, ".")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			alfred.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if alfred.err != nil {
		t.Fatalf("build alfred: %v", alfred.err)
	}
	return alfred.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if alfred.dir != "" {
		os.RemoveAll(alfred.dir)
	}
	os.Exit(code)
}

// configReference returns the defaults of `alfred config reference`, by
// variable name ("" for "(empty)").
func configReference(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command(alfredBinary(t), "config", "reference").Output()
	if err != nil {
		t.Fatalf("alfred config reference: %v", err)
	}
	ref := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		def := strings.TrimSpace(cells[3])
		if def == "(empty)" {
			def = ""
		}
		ref[name] = strings.Trim(def, "`")
	}
	if len(ref) == 0 {
		t.Fatalf("alfred config reference listed no setting:\n%s", out)
	}
	return ref
}
