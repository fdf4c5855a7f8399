package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentCLI is what the agent image must show of one CLI of
// scripts/agent-clis.sh, on Debian 12's Node.js.
type agentCLI struct {
	adapter string // adapter id, as `alfred agents detect` prints it
	pkg     string // npm package pinned in scripts/agent-clis.sh
	exe     string // its executable
	// runs is false for a CLI that cannot run on Debian's Node.js: needsNode
	// is the major version it needs and failure what `--version` fails with.
	runs      bool
	needsNode int
	failure   string
	// printsPin is true when `--version` prints the package's version.
	printsPin bool
	resumable bool
}

var agentCLIs = []agentCLI{
	{adapter: "claude-code", pkg: "@anthropic-ai/claude-code", exe: "claude", runs: true, printsPin: true, resumable: true},
	{adapter: "codex", pkg: "@openai/codex", exe: "codex", runs: true, printsPin: true, resumable: true},
	{adapter: "opencode", pkg: "opencode-ai", exe: "opencode", runs: true, printsPin: true, resumable: true},
	{adapter: "copilot", pkg: "@github/copilot", exe: "copilot", runs: true, printsPin: true, resumable: true},
	// @google/gemini-cli declares engines.node >=20; its bundle uses the
	// regular expression flag v, which Node.js 18 does not parse.
	{adapter: "gemini", pkg: "@google/gemini-cli", exe: "gemini", needsNode: 20, failure: "SyntaxError: Invalid regular expression flags"},
	// @vibe-kit/grok-cli 0.0.34 prints 1.0.1; the adapter never resumes.
	{adapter: "grok", pkg: "@vibe-kit/grok-cli", exe: "grok", runs: true},
}

// TestAgentImage checks the image of sandbox/images/agent/Dockerfile that
// scripts/images.sh built: its user, that nothing of the bot is in it, the
// model gateway's forwarder, the pinned packages, and what `alfred agents
// detect` finds in it.
func TestAgentImage(t *testing.T) {
	d := newDocker(t)
	image := need(t, envAgentImage)
	pins := agentPins(t)
	node := strings.TrimSpace(d.Must(t, "run", "--rm", "--network", "none", image, "node", "--version"))
	t.Logf("Node.js in %s: %s", image, node)

	t.Run("the pins are the CLIs checked here", func(t *testing.T) {
		var pkgs, want []string
		for p := range pins {
			pkgs = append(pkgs, p)
		}
		for _, c := range agentCLIs {
			want = append(want, c.pkg)
		}
		slices.Sort(pkgs)
		slices.Sort(want)
		if !slices.Equal(pkgs, want) {
			t.Errorf("scripts/agent-clis.sh pins %v; this test expects %v: update agentCLIs", pkgs, want)
		}
	})

	t.Run("runs as ALFRED_AGENT_USER", func(t *testing.T) {
		cfg := d.imageConfig(t, image)
		want := configReference(t)["ALFRED_AGENT_USER"]
		if cfg.User != want {
			t.Errorf("USER = %q; want ALFRED_AGENT_USER's default %q", cfg.User, want)
		}
		if got := strings.TrimSpace(d.Must(t, "run", "--rm", "--network", "none", image, "id", "-un")); got != "agent" {
			t.Errorf("id -un = %q; want agent", got)
		}
	})

	t.Run("nothing of the bot", func(t *testing.T) {
		// agent-clis.sh is looked for too: it proves the search went through the image.
		got := d.filesNamed(t, image, "alfred", "agent-clis.sh")
		if want := []string{"/usr/local/lib/alfred/agent-clis.sh"}; !slices.Equal(got, want) {
			t.Errorf("files named alfred or agent-clis.sh in %s: %v; want only %v", image, got, want)
		}
	})

	t.Run("the model gateway's forwarder", func(t *testing.T) {
		// Without its socket it says so and exits 125: it is there and it starts.
		out := d.Must(t, "run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c",
			"command -v alfred-forward; alfred-forward -socket /nonexistent.sock -- true 2>&1; echo rc=$?")
		if !strings.Contains(out, "/usr/local/bin/alfred-forward\n") || !strings.Contains(out, "is not the gateway's socket") || !strings.Contains(out, "rc=125") {
			t.Errorf("alfred-forward in %s: %q; want /usr/local/bin/alfred-forward, refusing a missing socket", image, out)
		}
	})

	t.Run("the executables come from the pinned packages", func(t *testing.T) {
		got := installedPackages(t, d, image)
		for _, c := range agentCLIs {
			if pkg := got[c.exe]; pkg != c.pkg+"@"+pins[c.pkg] {
				t.Errorf("/usr/local/bin/%s belongs to %q; want %s@%s", c.exe, pkg, c.pkg, pins[c.pkg])
			}
		}
	})

	t.Run("alfred agents detect", func(t *testing.T) {
		rows := detect(t, d.Host, image)
		major := nodeMajor(t, node)
		for _, c := range agentCLIs {
			t.Run(c.adapter, func(t *testing.T) {
				row, ok := rows[c.adapter]
				if !ok {
					t.Fatalf("no line for %s in: %v", c.adapter, rows)
				}
				if !c.runs {
					if major >= c.needsNode {
						t.Fatalf("expected %s not to run on Node.js %s (it needs %d); the image has a newer one: update agentCLIs", c.adapter, node, c.needsNode)
					}
					if row.version != "-" || row.resumable || !strings.Contains(row.reason, "installed but does not start") || !strings.Contains(row.reason, c.failure) {
						t.Fatalf("%s: %+v; want installed but not starting, failing with %q", c.adapter, row, c.failure)
					}
					t.Logf("%s %s does NOT run on Debian's Node.js %s (it needs Node.js >= %d): %s", c.pkg, pins[c.pkg], node, c.needsNode, row.reason)
					return
				}
				if row.version == "-" || row.version == "" {
					t.Fatalf("%s not detected: %s", c.adapter, row.reason)
				}
				if c.printsPin && row.version != pins[c.pkg] {
					t.Errorf("%s version %s; pinned %s", c.adapter, row.version, pins[c.pkg])
				}
				if row.resumable != c.resumable {
					t.Errorf("%s resumable = %v (%s); want %v", c.adapter, row.resumable, row.reason, c.resumable)
				}
				if row.resumable == (row.reason != "") {
					t.Errorf("%s: resumable %v with reason %q; a reason goes with not resumable only", c.adapter, row.resumable, row.reason)
				}
				t.Logf("%s %s runs: version %s, resumable %v %s", c.pkg, pins[c.pkg], row.version, row.resumable, row.reason)
			})
		}
	})
}

// agentPins reads the pins of scripts/agent-clis.sh: package -> version.
func agentPins(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("sh", filepath.Join(repoRoot, "scripts", "agent-clis.sh"), "--pins").Output()
	if err != nil {
		t.Fatalf("scripts/agent-clis.sh --pins: %v", err)
	}
	pins := map[string]string{}
	for _, pin := range strings.Fields(string(out)) {
		i := strings.LastIndex(pin, "@")
		if i <= 0 {
			t.Fatalf("pin %q is not name@version", pin)
		}
		pins[pin[:i]] = pin[i+1:]
	}
	return pins
}

// installedPackages maps each executable in /usr/local/bin of image to the
// npm package (name@version) holding the file it resolves to.
func installedPackages(t *testing.T, d dockerCLI, image string) map[string]string {
	t.Helper()
	const script = `
const fs = require("fs"), path = require("path");
for (const exe of fs.readdirSync("/usr/local/bin")) {
	let dir = path.dirname(fs.realpathSync(path.join("/usr/local/bin", exe)));
	while (dir !== "/" && !fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
	const pj = dir === "/" ? {} : JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
	console.log(exe, (pj.name || "?") + "@" + (pj.version || "?"));
}`
	out := d.Must(t, "run", "--rm", "--network", "none", image, "node", "-e", script)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if exe, pkg, ok := strings.Cut(line, " "); ok {
			got[exe] = pkg
		}
	}
	return got
}

// detected is one line of `alfred agents detect`.
type detected struct {
	version   string
	resumable bool
	reason    string
}

// detect runs `alfred agents detect` on the image runner with image, in an
// environment of its own, and reads its table by adapter.
func detect(t *testing.T, dockerHost, image string) map[string]detected {
	t.Helper()
	bin := alfredBinary(t)
	dir := t.TempDir()
	env := []string{
		"ALFRED_RUNNER=image",
		"ALFRED_DOCKER_HOST=" + dockerHost,
		"ALFRED_AGENT_IMAGE=" + image,
		"ALFRED_STATE_DIR=" + filepath.Join(dir, "state.git"),
		"ALFRED_DATA_DIR=" + filepath.Join(dir, "data"),
		"ALFRED_INSTANCE=deploy-test-" + strconv.Itoa(os.Getpid()),
	}
	for _, kv := range os.Environ() { // nothing of the caller's configuration
		if !strings.HasPrefix(kv, "ALFRED_") && !strings.HasPrefix(kv, "AGENT_") && !strings.HasPrefix(kv, "DOCKER_HOST=") {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "agents", "detect")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("alfred agents detect: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Logf("alfred agents detect:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "ADAPTER") {
		t.Fatalf("alfred agents detect printed no table:\n%s", stdout.String())
	}
	cols := regexp.MustCompile(`\s{2,}`)
	rows := map[string]detected{}
	for _, line := range lines[1:] {
		// ADAPTER RUNNER VERSION RESUMABLE VERIFIED-RANGE [REASON]
		f := cols.Split(strings.TrimSpace(line), 6)
		if len(f) < 5 {
			t.Fatalf("unexpected line %q", line)
		}
		if f[1] != "image" {
			t.Errorf("%s ran on the %s runner; want image", f[0], f[1])
		}
		row := detected{version: f[2], resumable: f[3] == "true"}
		if len(f) == 6 {
			row.reason = f[5]
		}
		rows[f[0]] = row
	}
	return rows
}

// nodeMajor reads the major version of `node --version` (v18.20.4).
func nodeMajor(t *testing.T, v string) int {
	t.Helper()
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		t.Fatalf("node --version printed %q", v)
	}
	return n
}
