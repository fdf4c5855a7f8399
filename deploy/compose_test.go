package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerSocket is the Docker daemon's socket: the only host socket the bot gets.
const dockerSocket = "/var/run/docker.sock"

// composeEnv is what the compose files need from the environment.
var composeEnv = []string{
	"ALFRED_FORGE_TOKEN=token",
	"ALFRED_WEBHOOK_SECRETS=secret",
	"FORGEJO_ROOT_URL=http://192.0.2.10:3000/",
}

// TestComposeFiles checks the compose files, as Docker Compose reads them.
func TestComposeFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   []string
		forgejo bool // with a Forgejo service the bot uses
	}{
		{"alfred alone", []string{"compose.yaml"}, false},
		{"alfred with forgejo", []string{"compose.yaml", "compose.forgejo.yaml"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project := composeConfig(t, tc.files)
			bot, ok := project.Services["alfred"]
			if !ok {
				t.Fatalf("no service alfred in %v", tc.files)
			}
			ref := configReference(t)

			t.Run("every ALFRED_ name is a setting", func(t *testing.T) {
				names := regexp.MustCompile(`\bALFRED_[A-Z0-9_]+`)
				for _, f := range tc.files {
					text, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					for _, name := range names.FindAllString(string(text), -1) {
						if _, ok := ref[name]; !ok {
							t.Errorf("%s names %s, which alfred config reference does not list", f, name)
						}
					}
				}
				for name := range bot.Environment {
					if _, ok := ref[name]; !ok {
						t.Errorf("the alfred service sets %s, which alfred config reference does not list", name)
					}
				}
			})

			t.Run("the images are the ones scripts/images.sh builds", func(t *testing.T) {
				checkComposeImages(t, project, ref)
			})

			t.Run("the data folder has the same path on both sides", func(t *testing.T) {
				data := bot.env("ALFRED_DATA_DIR")
				if !filepath.IsAbs(data) {
					t.Fatalf("ALFRED_DATA_DIR = %q; want an absolute path", data)
				}
				if !slices.Contains(bot.binds(t), bind{source: data, target: data}) {
					t.Errorf("no bind of %s at the same path; binds: %v", data, bot.binds(t))
				}
			})

			t.Run("the state repository is on a volume", func(t *testing.T) {
				st := bot.env("ALFRED_STATE_DIR")
				if !slices.ContainsFunc(bot.volumes(t), func(v string) bool { return strings.HasPrefix(st+"/", strings.TrimSuffix(v, "/")+"/") }) {
					t.Errorf("ALFRED_STATE_DIR %s is on no named volume; volumes at %v", st, bot.volumes(t))
				}
			})

			t.Run("the host gives only the data folder and the Docker socket", func(t *testing.T) {
				want := []string{
					fmt.Sprintf("alfred %s:%s", bot.env("ALFRED_DATA_DIR"), bot.env("ALFRED_DATA_DIR")),
					fmt.Sprintf("alfred %s:%s", dockerSocket, dockerSocket),
				}
				var got []string
				for name, s := range project.Services {
					for _, b := range s.binds(t) {
						got = append(got, fmt.Sprintf("%s %s:%s", name, b.source, b.target))
					}
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("host binds %v; want %v", got, want)
				}
				if host := bot.env("ALFRED_DOCKER_HOST"); host != "unix://"+dockerSocket {
					t.Errorf("ALFRED_DOCKER_HOST = %q; want the mounted socket unix://%s", host, dockerSocket)
				}
			})

			t.Run("the forge", func(t *testing.T) {
				forge, ok := project.Services["forgejo"]
				if ok != tc.forgejo {
					t.Fatalf("service forgejo present: %v; want %v", ok, tc.forgejo)
				}
				if !tc.forgejo {
					return
				}
				if u, err := url.Parse(bot.env("ALFRED_FORGE_URL")); err != nil || u.Hostname() != "forgejo" || bot.env("ALFRED_FORGE") != "forgejo" {
					t.Errorf("ALFRED_FORGE %q, ALFRED_FORGE_URL %q; want forgejo at http://forgejo:...", bot.env("ALFRED_FORGE"), bot.env("ALFRED_FORGE_URL"))
				}
				if _, ok := bot.DependsOn["forgejo"]; !ok {
					t.Errorf("alfred does not depend on forgejo: %v", bot.DependsOn)
				}
				if hosts := forge.env("FORGEJO__webhook__ALLOWED_HOST_LIST"); !slices.Contains(strings.Split(hosts, ","), "alfred") {
					t.Errorf("Forgejo's webhook host list %q does not allow alfred", hosts)
				}
			})
		})
	}
}

// checkComposeImages compares the images of the compose file with those of
// scripts/images.sh (which also tags them :latest) and with the Dockerfiles
// that build them.
func checkComposeImages(t *testing.T, project composeProject, ref map[string]string) {
	d := newDocker(t)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	bot := project.Services["alfred"]
	agent, ok := project.Services["agent-image"]
	if !ok {
		t.Fatal("no service agent-image builds the agent image")
	}
	agentImage := bot.env("ALFRED_AGENT_IMAGE")
	if agentImage != ref["ALFRED_AGENT_IMAGE"] {
		t.Errorf("ALFRED_AGENT_IMAGE = %q; the default is %q", agentImage, ref["ALFRED_AGENT_IMAGE"])
	}
	for _, c := range []struct {
		service    string
		s          composeService
		image      string // what compose runs
		built      string // what scripts/images.sh built
		dockerfile string // what builds it, from the repository root ("": not built here)
	}{
		{"alfred", bot, bot.Image, need(t, envBotImage), "Dockerfile"},
		{"agent-image", agent, agent.Image, need(t, envAgentImage), "sandbox/images/agent/Dockerfile"},
		{"alfred's ALFRED_AGENT_IMAGE", bot, agentImage, need(t, envAgentImage), ""},
	} {
		if want := repo(c.built) + ":latest"; c.image != want {
			t.Errorf("%s: image %q; scripts/images.sh builds %q", c.service, c.image, want)
		}
		latest, err := d.Run("image", "inspect", "--format", "{{.Id}}", c.image)
		built := d.Must(t, "image", "inspect", "--format", "{{.Id}}", c.built)
		if err != nil || latest != built {
			t.Errorf("%s: %s is not %s in the daemon (%v)", c.service, c.image, c.built, err)
		}
		if c.dockerfile == "" {
			continue
		}
		if c.s.Build == nil || c.s.Build.Context != root || c.s.Build.Dockerfile != c.dockerfile {
			t.Errorf("%s: build %+v; want context %s and Dockerfile %s", c.service, c.s.Build, root, c.dockerfile)
		}
	}
}

// composeProject is the part of `docker-compose config` the tests read.
type composeProject struct {
	Services map[string]composeService
}

type composeService struct {
	Image string
	Build *struct {
		Context    string
		Dockerfile string
	}
	Environment map[string]*string
	Volumes     []json.RawMessage // "source:target[:mode]" or {type, source, target}
	DependsOn   map[string]any    `json:"depends_on"`
}

func (s composeService) env(name string) string {
	if v := s.Environment[name]; v != nil {
		return *v
	}
	return ""
}

// bind is a host path mounted in a container.
type bind struct{ source, target string }

// mounts splits the service's volumes into host binds and named volumes
// (their targets).
func (s composeService) mounts(t *testing.T) (binds []bind, named []string) {
	t.Helper()
	for _, raw := range s.Volumes {
		var short string
		var long struct{ Type, Source, Target string }
		switch {
		case json.Unmarshal(raw, &short) == nil:
			parts := strings.Split(short, ":")
			if len(parts) < 2 {
				t.Fatalf("volume %q has no target", short)
			}
			long.Source, long.Target = parts[0], parts[1]
			long.Type = "volume"
			if strings.HasPrefix(long.Source, "/") {
				long.Type = "bind"
			}
		case json.Unmarshal(raw, &long) == nil:
		default:
			t.Fatalf("volume %s is neither short nor long syntax", raw)
		}
		if long.Type == "bind" {
			binds = append(binds, bind{long.Source, long.Target})
		} else {
			named = append(named, long.Target)
		}
	}
	return binds, named
}

func (s composeService) binds(t *testing.T) []bind {
	b, _ := s.mounts(t)
	return b
}

func (s composeService) volumes(t *testing.T) []string {
	_, v := s.mounts(t)
	return v
}

// composeConfig runs `docker-compose config` (Debian's docker-compose) on the
// files, which validates them and resolves interpolation, merging and paths,
// and decodes its YAML with the Python YAML module docker-compose itself uses.
func composeConfig(t *testing.T, files []string) composeProject {
	t.Helper()
	for _, tool := range []string{"docker-compose", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if testing.Short() {
				t.Skipf("-short: %s is missing (Debian's docker-compose package brings it)", tool)
			}
			t.Fatalf("%s is missing: install Debian's docker-compose package (scripts/test.sh does)", tool)
		}
	}
	args := []string{"--project-directory", ".", "config"}
	for i := len(files) - 1; i >= 0; i-- {
		args = append([]string{"-f", files[i]}, args...)
	}
	cmd := exec.Command("docker-compose", args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, composeEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	toJSON := exec.Command("python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)")
	toJSON.Stdin = bytes.NewReader(out)
	stderr.Reset()
	toJSON.Stderr = &stderr
	js, err := toJSON.Output()
	if err != nil {
		t.Fatalf("YAML to JSON with python3's yaml module (python3-yaml): %v\n%s", err, stderr.String())
	}
	var p composeProject
	if err := json.Unmarshal(js, &p); err != nil {
		t.Fatalf("decode docker-compose config: %v\n%s", err, out)
	}
	return p
}
