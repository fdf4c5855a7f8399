package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageRunnerBindsAndPrefix: a socket file bound read-write (as the
// model gateway's is) is a socket the non-root agent may write to (the
// connection through it: bot.TestSealedRunInDocker), a read-only bind stays
// read-only, and the Prefix runs in front of Argv.
func TestImageRunnerBindsAndPrefix(t *testing.T) {
	r := newTestImageRunner(t)
	dir, err := os.MkdirTemp("", "sbx") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro.txt")
	if err := os.WriteFile(ro, []byte("read me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := r.spec(`test -S /run/alfred/s.sock && test -w /run/alfred/s.sock && echo "a writable socket"
cat /run/alfred/ro.txt
echo x >/run/alfred/ro.txt 2>/dev/null && echo overwrote
echo "prefixed: $0"`)
	spec.Binds = []Mount{{Host: sock, Container: "/run/alfred/s.sock"}, {Host: ro, Container: "/run/alfred/ro.txt", ReadOnly: true}}
	// env runs Argv as its child, as the forwarder does.
	spec.Prefix = []string{"env", "PREFIXED=1"}
	spec.Argv = append(spec.Argv[:len(spec.Argv)-1], spec.Argv[len(spec.Argv)-1]+"\necho \"env: $PREFIXED\"")
	res := r.run(t, spec)
	out := string(res.Stdout)
	for _, want := range []string{"a writable socket\n", "read me\n", "env: 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout %q lacks %q; stderr %s", out, want, res.Stderr)
		}
	}
	if strings.Contains(out, "overwrote") {
		t.Error("a read-only bind was written")
	}
}

// TestBindsRefused: binds may not overlap the worktree or be relative, and
// the host runner refuses binds and a prefix.
func TestBindsRefused(t *testing.T) {
	for _, b := range []Mount{{Host: "/tmp/x", Container: "/workspace/x"}, {Host: "/tmp/x", Container: "/home"}, {Host: "x", Container: "/run/x"}} {
		spec := Spec{Image: "i", UID: 1000, GID: 1000, Argv: []string{"true"}, Binds: []Mount{b}}
		if _, _, err := containerMounts(&spec); err == nil {
			t.Errorf("bind %+v accepted", b)
		}
	}
	h := NewHostRunner(HostOptions{})
	for _, spec := range []Spec{{Argv: []string{"true"}, Binds: []Mount{{Host: "/tmp", Container: "/run/x"}}}, {Argv: []string{"true"}, Prefix: []string{"env"}}} {
		if _, err := h.Run(context.Background(), spec); !errors.Is(err, ErrBindsOnHost) {
			t.Errorf("host runner: %v", err)
		}
	}
}
