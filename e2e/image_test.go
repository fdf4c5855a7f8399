package e2e

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// agentReply is what the mock model answers to every request: the analysis
// phase splits it into the functional analysis and the plan.
const agentReply = "## Functional analysis\n\nThe demo should greet its users.\n\n## Implementation plan\n\n1. Add a greeting.\n2. Test it."

// wrapper is the image's `claude`: it starts the mock model server inside the
// container (network none: only loopback), then the real Claude Code. Where
// the prompt asks for changes, the mock model answers with a Write tool use,
// which Claude Code carries out in /workspace. A file named e2e-slow in the
// session folder holds the run back, so the test can kill the bot in the
// middle of it; the run takes it away, so that a copy of the session made
// when the run is stopped (the Kubernetes runner copies it back) does not
// hold the next run too.
const wrapper = `#!/bin/sh
if [ -e /home/agent/.claude/projects/e2e-slow ]; then rm -f /home/agent/.claude/projects/e2e-slow; sleep 120; fi
exec /opt/claude/claude "$@"
`

// buildImage makes the agent image from files of this machine (no registry
// is reachable): busybox, the glibc that Claude Code's native binary links,
// that binary, the gateway's forwarder built from cmd/alfred-forward (runs
// are sealed by default: the model is the mock on the host, behind the bot's
// gateway), and the wrapper; then `docker import`s it as tag.
func buildImage(t testing.TB, dockerHost, claude, tag string) {
	t.Helper()
	fwd := filepath.Join(t.TempDir(), "alfred-forward")
	build := exec.Command("go", "build", "-trimpath", "-o", fwd, "../cmd/alfred-forward")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build alfred-forward: %v\n%s", err, out)
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatalf("busybox (Debian's busybox-static, which scripts/dockerd.sh installs): %v", err)
	}
	files := map[string]string{ // path in the image -> file on this machine
		"/bin/busybox":                  busybox,
		"/opt/claude/claude":            claude,
		"/usr/local/bin/alfred-forward": fwd,
	}
	// bash: Claude Code's Bash tool needs it (the red-team test's injected
	// prompt runs its attacks with it).
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	files["/bin/bash"] = bash
	for _, bin := range []string{claude, bash} {
		ldd, err := exec.Command("ldd", bin).Output()
		if err != nil {
			t.Fatalf("ldd %s: %v", bin, err)
		}
		for _, lib := range regexp.MustCompile(`(/lib[^ ]+)`).FindAllString(string(ldd), -1) {
			files[lib] = lib
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(name, "/") + "/", Mode: mode})
	}
	file := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Mode: mode, Size: int64(len(data))})
		tw.Write(data)
	}
	made := map[string]bool{}
	for _, d := range []string{"/bin", "/etc", "/home", "/home/agent", "/workspace", "/opt", "/opt/claude", "/usr", "/usr/local", "/usr/local/bin", "/proc", "/sys", "/dev"} {
		dir(d, 0o755)
		made[d] = true
	}
	dir("/tmp", 0o1777)
	for dst, src := range files {
		var parents []string
		for p := filepath.Dir(dst); p != "/" && !made[p]; p = filepath.Dir(p) {
			parents = append([]string{p}, parents...)
		}
		for _, p := range parents {
			dir(p, 0o755)
			made[p] = true
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		file(dst, 0o755, data)
	}
	// tar and tail: the kubernetes runner stages files and follows stderr with them.
	for _, c := range []string{"sh", "sleep", "cat", "touch", "date", "rm", "ls", "id", "tar", "tail",
		"mkdir", "ln", "mkfifo", "find", "dd", "chmod", "basename", "printf", "cp", "grep", "head", "env", "echo", "stat", "which"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + c, Linkname: "busybox", Mode: 0o777})
	}
	file("/usr/local/bin/claude", 0o755, []byte(wrapper))
	file("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/home/agent:/bin/sh\n"))
	file("/etc/group", 0o644, []byte("root:x:0:\nagent:x:1000:\n"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	imp := exec.Command("docker", "-H", dockerHost, "import", "-", tag)
	imp.Stdin = &buf
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
}
