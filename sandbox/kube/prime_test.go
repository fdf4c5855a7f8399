package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/sandbox"
)

// TestRunnerPrimedCopyFails: when the primed copy-out's exec has ended
// before the agent did (here the agent kills its waiting shell, as a dropped
// connection would end it), the copy-out runs anew: the worktree and stderr
// still come back whole.
func TestRunnerPrimedCopyFails(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	worktree := ownedDir(t)
	// The pattern is split so that the agent's own command line lacks it;
	// the primed exec opens beside the agent's start: it is waited for.
	spec := r.spec(`n=0; p="read -r"; i=0
while [ $n = 0 ] && [ $i -lt 200 ]; do
  for d in /proc/[0-9]*; do
    if grep -q "$p go &&" "$d/cmdline" 2>/dev/null; then kill "${d#/proc/}" && n=$((n+1)); fi
  done
  i=$((i+1)); [ $n = 0 ] && sleep 0.05
done
echo "killed $n"; echo written >out.txt; echo to-stderr >&2`)
	spec.Worktree = &sandbox.Mount{Host: worktree, Container: sandbox.WorkspacePath}
	res := r.run(t, spec)
	if string(res.Stdout) != "killed 1\n" {
		t.Fatalf("stdout %q, want the primed copy-out's shell found and killed; stderr %q", res.Stdout, res.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(worktree, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("out.txt on the host: %q, %v; want the agent's file", b, err)
	}
	if string(res.Stderr) != "to-stderr\n" {
		t.Errorf("stderr %q, want the agent's", res.Stderr)
	}
}
