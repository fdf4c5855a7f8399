package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeGo stands in for the go command in TestK8sBuildOnlyMissing: it logs
// its arguments, answers `go mod download -json` with a go.mod of one
// staging module, and `go build -o DIR/ PKG...` with a script per command.
const fakeGo = `#!/bin/sh
echo "$*" >>"$FAKE_GO_LOG"
case $1 in
mod) printf '{\n\t"GoMod": "%s",\n\t"Hash": "0123abcd"\n}\n' "$FAKE_GOMOD" ;;
build)
	out="" prev=""
	for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
	for a in "$@"; do
		case $a in k8s.io/kubernetes/cmd/*) printf '#!/bin/sh\necho built\n' >"$out/${a##*/}"; chmod +x "$out/${a##*/}" ;; esac
	done
	;;
esac
`

// TestK8sBuildOnlyMissing: scripts/k8s.sh build builds the components its
// cache lacks and only those (a cache made before kube-proxy was added gets
// kube-proxy alone, the others kept as they are), all of them into a new
// cache, and runs no go command for a complete one.
func TestK8sBuildOnlyMissing(t *testing.T) {
	all := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl", "kube-proxy"}
	for _, tc := range []struct {
		name      string
		have      []string
		wantBuilt []string // nil: no go build at all
	}{
		{"a cache made before kube-proxy", all[:5], []string{"kube-proxy"}},
		{"an empty cache", nil, all},
		{"a complete cache", all, nil},
		{"two missing", []string{"kube-apiserver", "kubelet", "kubectl", "kube-proxy"}, []string{"kube-controller-manager", "kube-scheduler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache, fake := filepath.Join(dir, "cache"), filepath.Join(dir, "fakebin")
			bin := filepath.Join(cache, "k8s-v1.37.2", "bin")
			netpol := filepath.Join(cache, "netpol-kube-router-v2.1.0", "bin")
			for _, d := range []string{fake, netpol} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write(t, filepath.Join(netpol, "kube-router"), "#!/bin/sh\n", 0o755)
			write(t, filepath.Join(fake, "go"), fakeGo, 0o755)
			gomod := filepath.Join(dir, "go.mod")
			write(t, gomod, "module k8s.io/kubernetes\n\ngo 1.25.0\n\nrequire (\n\tk8s.io/api v0.0.0\n)\n", 0o644)
			if len(tc.have) > 0 {
				if err := os.MkdirAll(bin, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range tc.have {
				write(t, filepath.Join(bin, c), "#!/bin/sh\necho cached "+c+"\n", 0o755)
			}
			log := filepath.Join(dir, "go.log")
			cmd := exec.Command("sh", filepath.Join(repoRoot, "scripts", "k8s.sh"), "build")
			cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"), "ALFRED_K8S_CACHE="+cache,
				"FAKE_GO_LOG="+log, "FAKE_GOMOD="+gomod)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("k8s.sh build: %v\n%s", err, out)
			}
			calls, _ := os.ReadFile(log)
			var built []string
			for _, line := range strings.Split(string(calls), "\n") {
				if !strings.HasPrefix(line, "build ") {
					continue
				}
				for _, f := range strings.Fields(line) {
					if c, ok := strings.CutPrefix(f, "k8s.io/kubernetes/cmd/"); ok {
						built = append(built, c)
					}
				}
			}
			if !slices.Equal(built, tc.wantBuilt) {
				t.Errorf("go build of %q; want %q (go calls:\n%s)", built, tc.wantBuilt, calls)
			}
			for _, c := range all {
				got, err := os.ReadFile(filepath.Join(bin, c))
				if err != nil {
					t.Errorf("%s missing from the cache after the build: %v", c, err)
					continue
				}
				want := "#!/bin/sh\necho built\n"
				if slices.Contains(tc.have, c) {
					want = "#!/bin/sh\necho cached " + c + "\n"
				}
				if string(got) != want {
					t.Errorf("%s in the cache: %q; want %q", c, got, want)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(cache, ".build-*")); len(left) > 0 {
				t.Errorf("build folders left in the cache: %q", left)
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
