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
// scripts/agent-clis.sh: every one starts there, on the pinned Node.js.
type agentCLI struct {
	adapter string // adapter id, as `alfred agents detect` prints it
	pkg     string // npm package pinned in scripts/agent-clis.sh
	exe     string // its executable
	// printsPin is true when `--version` prints the package's version.
	printsPin bool
	resumable bool
}

var agentCLIs = []agentCLI{
	{adapter: "claude-code", pkg: "@anthropic-ai/claude-code", exe: "claude", printsPin: true, resumable: true},
	{adapter: "codex", pkg: "@openai/codex", exe: "codex", printsPin: true, resumable: true},
	{adapter: "opencode", pkg: "opencode-ai", exe: "opencode", printsPin: true, resumable: true},
	{adapter: "copilot", pkg: "@github/copilot", exe: "copilot", printsPin: true, resumable: true},
	{adapter: "gemini", pkg: "@google/gemini-cli", exe: "gemini", printsPin: true, resumable: true},
	// @vibe-kit/grok-cli 0.0.34 prints 1.0.1; the adapter never resumes.
	{adapter: "grok", pkg: "@vibe-kit/grok-cli", exe: "grok"},
}

// agentImageMaxBytes bounds the agent image's size (`docker image inspect`'s
// Size, uncompressed). Most of it is the native executables the CLIs exec,
// which no pruning can shrink: Claude Code 2.1.332 402 MB, Codex 315 MB,
// Copilot 197 MB, OpenCode 185 MB, over 1 GiB together; then Node.js
// (127 MB), the Gemini CLI's bundle (96 MB), Grok's modules and Debian with
// git: 1514 MiB for the pins of 2026-12-04. The bound leaves room for the
// CLIs to grow a little and catches a second copy of any of the four big
// binaries, as musl builds or platform packages left next to a copied
// binary were (checkPruned also looks for them by name).
const agentImageMaxBytes = 1638 << 20 // 1.6 GiB

// agentCLIsDir is where the agent image holds the installed cache of
// scripts/agent-clis.sh.
const agentCLIsDir = "/opt/alfred/agent-clis"

// TestAgentImage checks the image of sandbox/images/agent/Dockerfile that
// scripts/images.sh built: its user, that nothing of the bot is in it, the
// model gateway's forwarder, the pinned Node.js and packages, its size, and
// that `alfred agents detect` finds every CLI starting in it.
func TestAgentImage(t *testing.T) {
	d := newDocker(t)
	image := need(t, envAgentImage)
	pins := agentPins(t)

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

	t.Run("the pinned Node.js alone", func(t *testing.T) { checkNode(t, d, image) })

	t.Run("the executables come from the pinned packages", func(t *testing.T) {
		got := installedPackages(t, d, image)
		for _, c := range agentCLIs {
			if pkg := got[c.exe]; pkg != c.pkg+"@"+pins[c.pkg] {
				t.Errorf("/usr/local/bin/%s belongs to %q; want %s@%s", c.exe, pkg, c.pkg, pins[c.pkg])
			}
		}
	})

	t.Run("pruned", func(t *testing.T) { checkPruned(t, d, image) })

	t.Run("alfred agents detect", func(t *testing.T) { checkDetect(t, d, image, pins) })
}

// checkNode: node, npm and npx are the pinned ones of scripts/agent-clis.sh,
// in /usr/local/bin, and no other Node.js is in the image (Debian's nodejs
// and npm only fetched it, in the build stage).
func checkNode(t *testing.T, d dockerCLI, image string) {
	t.Helper()
	want := "v" + agentScript(t, "--node-version")
	out := d.Must(t, "run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c",
		`node --version; which -a node npm npx | tr '\n' ' '; echo; npm --version; `+
			`ls -d /usr/bin/node /usr/bin/nodejs /usr/bin/npm /usr/share/nodejs 2>/dev/null; dpkg-query -W -f '${Package} ' nodejs npm libnode108 2>/dev/null; echo end`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	t.Logf("node --version; which -a node npm npx; npm --version; Debian's Node.js:\n%s", out)
	if len(lines) < 4 || lines[0] != want {
		t.Fatalf("node --version in %s: %q; want the pinned %s", image, lines[0], want)
	}
	if got := strings.TrimSpace(lines[1]); got != "/usr/local/bin/node /usr/local/bin/npm /usr/local/bin/npx" {
		t.Errorf("which -a node npm npx = %q; want each once, in /usr/local/bin", got)
	}
	if lines[2] == "" {
		t.Errorf("npm --version printed nothing")
	}
	if rest := strings.Join(lines[3:], " "); rest != "end" {
		t.Errorf("Debian's Node.js is in %s: %q; want none of /usr/bin/node, nodejs, npm, /usr/share/nodejs and no nodejs, npm or libnode108 package", image, rest)
	}
}

// checkPruned: no musl build or second copy of a native binary in the
// installed CLIs, and the image under agentImageMaxBytes; the biggest
// folders are logged.
func checkPruned(t *testing.T, d dockerCLI, image string) {
	t.Helper()
	nm := agentCLIsDir + "/node_modules"
	out := d.Must(t, "run", "--rm", "--network", "none", "--entrypoint", "find", image, nm, "-mindepth", "1", "-maxdepth", "2", "-type", "d",
		"(", "-name", "*musl*", "-o", "-name", "claude-code-*", "-o", "-name", "opencode-linux-*", ")")
	if left := strings.Fields(out); len(left) > 0 {
		t.Errorf("%s holds what scripts/agent-clis.sh prunes: %v", image, left)
	}
	// What the pruning must leave: Codex's default model gets its tools
	// through its code-mode host.
	host := d.Must(t, "run", "--rm", "--network", "none", "--entrypoint", "find", image, nm+"/@openai", "-name", "codex-code-mode-host", "-type", "f")
	if strings.TrimSpace(host) == "" {
		t.Errorf("%s lacks Codex's code-mode host: its default model would run with no tools", image)
	}
	du := d.Must(t, "run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c",
		"du -xsm /usr /opt/alfred/agent-clis/runtime "+nm+"/* "+nm+"/@*/* 2>/dev/null | sort -rn | head -n 12")
	t.Logf("the biggest folders of %s (MB):\n%s", image, du)
	size, err := strconv.ParseInt(strings.TrimSpace(d.Must(t, "image", "inspect", "--format", "{{.Size}}", image)), 10, 64)
	if err != nil {
		t.Fatalf("docker image inspect %s: Size: %v", image, err)
	}
	t.Logf("%s: %d bytes (%.0f MiB)", image, size, float64(size)/(1<<20))
	if size >= agentImageMaxBytes {
		t.Errorf("%s is %d bytes (%.0f MiB); want under %d (%.0f MiB)", image, size, float64(size)/(1<<20), agentImageMaxBytes, float64(agentImageMaxBytes)/(1<<20))
	}
}

// checkDetect: `alfred agents detect` on the image runner finds each CLI
// starting, at its pinned version, resumable as its adapter says.
func checkDetect(t *testing.T, d dockerCLI, image string, pins map[string]string) {
	t.Helper()
	rows := detect(t, d.Host, image)
	if len(rows) != len(agentCLIs) {
		t.Errorf("alfred agents detect printed %d adapters; want %d: %v", len(rows), len(agentCLIs), rows)
	}
	for _, c := range agentCLIs {
		t.Run(c.adapter, func(t *testing.T) {
			row, ok := rows[c.adapter]
			if !ok {
				t.Fatalf("no line for %s in: %v", c.adapter, rows)
			}
			if row.version == "-" || row.version == "" {
				t.Fatalf("%s does not start in %s: %s", c.adapter, image, row.reason)
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
			t.Logf("%s %s starts: version %s, resumable %v %s", c.pkg, pins[c.pkg], row.version, row.resumable, row.reason)
		})
	}
}

// agentScript runs scripts/agent-clis.sh with args that install nothing
// (--pins, --node-version) and returns what it printed.
func agentScript(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("sh", append([]string{filepath.Join(repoRoot, "scripts", "agent-clis.sh")}, args...)...).Output()
	if err != nil {
		t.Fatalf("scripts/agent-clis.sh %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// agentPins reads the pins of scripts/agent-clis.sh: package -> version.
func agentPins(t *testing.T) map[string]string {
	t.Helper()
	pins := map[string]string{}
	for _, pin := range strings.Fields(agentScript(t, "--pins")) {
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
