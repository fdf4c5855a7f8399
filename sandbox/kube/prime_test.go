package kube

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// TestRunnerPrimedCopyFails: when the primed copy-out's exec ends while the
// agent runs (here the agent kills its waiting shell and the stderr tail, as
// a dropped connection would end them), it is opened again and follows
// stderr from where it was: the worktree and stderr come back whole, and the
// Spec's stderr writer gets each byte once.
func TestRunnerPrimedCopyFails(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	worktree := ownedDir(t)
	// The pattern is split so that the agent's own command line lacks it;
	// the primed exec opens beside the agent's start: it is waited for.
	spec := r.spec(`echo before >&2; n=0; p="/run/d"; i=0
while [ $n = 0 ] && [ $i -lt 200 ]; do
  for d in /proc/[0-9]*; do
    if grep -q "$p/stderr" "$d/cmdline" 2>/dev/null; then kill "${d#/proc/}" && n=$((n+1)); fi
  done
  i=$((i+1)); [ $n = 0 ] && sleep 0.05
done
[ $n -ge 2 ] && echo killed; echo written >out.txt; echo to-stderr >&2`)
	spec.Worktree = &sandbox.Mount{Host: worktree, Container: sandbox.WorkspacePath}
	live := sandbox.NewCapture(nil) // a copy, safe for the runner's goroutines
	spec.Stderr = live
	res := r.run(t, spec)
	if string(res.Stdout) != "killed\n" {
		t.Fatalf("stdout %q, want the primed copy-out's shell and tail found and killed; stderr %q", res.Stdout, res.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(worktree, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("out.txt on the host: %q, %v; want the agent's file", b, err)
	}
	if string(res.Stderr) != "before\nto-stderr\n" {
		t.Errorf("stderr %q, want the agent's", res.Stderr)
	}
	if got := string(live.Bytes()); got != "before\nto-stderr\n" {
		t.Errorf("the Spec's stderr writer got %q, want each byte of the agent's stderr once", got)
	}
}

// TestMarkSplit: the primed exec's stderr is passed on up to the mark line
// and the rest kept as the copy-out's message, however the stream is cut
// into writes.
func TestMarkSplit(t *testing.T) {
	const mark = "alfred-end-0123"
	for _, tc := range []struct {
		name, in, out, msg string
		passed             int64
	}{
		{"mark after output", "a\nb\n\n" + mark + "\ntar: boom\n", "a\nb\n", "tar: boom\n", 4},
		{"output without a newline", "partial\n" + mark + "\n", "partial", "", 7},
		{"nothing before", "\n" + mark + "\n", "", "", 0},
		{"no mark yet", "line\n", "line", "", 4},
		{"a mark's start that is not one", "x\n" + mark[:5] + "y\n", "x\n" + mark[:5] + "y", "", int64(len("x\n" + mark[:5] + "y"))},
		{"a mark with a longer word", "\n" + mark + "x\nz\n", "\n" + mark + "x\nz", "", int64(len("\n" + mark + "x\nz"))},
		{"text after the mark", "e\n" + mark + "\n\n" + mark + "\n", "e", "\n" + mark + "\n", 1},
	} {
		for size := 1; size <= len(tc.in); size++ {
			var out, msg bytes.Buffer
			s := newMarkSplit(&out, mark)
			s.msg = &msg
			for in := tc.in; in != ""; {
				n := min(size, len(in))
				if k, err := s.Write([]byte(in[:n])); k != n || err != nil {
					t.Fatalf("%s, writes of %d: Write = %d, %v", tc.name, size, k, err)
				}
				in = in[n:]
			}
			if out.String() != tc.out || msg.String() != tc.msg || s.passed != tc.passed {
				t.Errorf("%s, writes of %d: passed %q (%d), message %q; want %q (%d), %q",
					tc.name, size, out.String(), s.passed, msg.String(), tc.out, tc.passed, tc.msg)
			}
		}
	}
	if strings.Contains(primedScript, "sleep") {
		t.Errorf("the primed script polls: %s", primedScript)
	}
}

// TestStageRetry: the retries of a refused exec start every 50 ms for half
// a second, then slow down to once a second, never faster than before.
func TestStageRetry(t *testing.T) {
	var total time.Duration
	prev := time.Duration(0)
	for i := range 40 {
		d := stageRetry(i)
		if d < prev || d < 50*time.Millisecond || d > time.Second {
			t.Fatalf("stageRetry(%d) = %v after %v: want 50 ms to 1 s, never shorter than the last", i, d, prev)
		}
		if i < 10 && d != 50*time.Millisecond {
			t.Errorf("stageRetry(%d) = %v, want 50 ms in the first half second", i, d)
		}
		prev, total = d, total+d
	}
	if prev != time.Second {
		t.Errorf("the retries end at %v apart, want 1 s", prev)
	}
	if total < 20*time.Second {
		t.Errorf("40 retries span %v: they should slow down to a second apart", total)
	}
}

// TestRunnerPrimedCopyOpens: an agent that writes to stderr and kills the
// primed copy-out's shell and tail, again and again, makes the bot open it
// primeOpens times in all at most; the run still ends with the whole
// stderr and its files.
func TestRunnerPrimedCopyOpens(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	worktree := ownedDir(t)
	// Each round waits up to 5 s for a new shell to kill: after the last
	// open none comes, and the agent ends.
	// Only the shells are counted, each once: not a tail whose shell was
	// killed the round before, not a shell's fork that has not yet become
	// its tail (its parent is a shell), not a shell killed already that
	// has not yet died (on a busy machine the next round finds it alive:
	// 21 and 22 were counted for 20 opens). The patterns are split so that
	// the agent's own command line lacks them.
	spec := r.spec(`p="/run/d"; q="read -r"; n=0; round=0; seen=""
while :; do
  echo "round $round" >&2; round=$((round+1)); k=0; i=0
  while [ $k = 0 ] && [ $i -lt 100 ]; do
    for d in /proc/[0-9]*; do
      if grep -q "$q go" "$d/cmdline" 2>/dev/null; then
        pid=${d#/proc/}; pp=$(awk '/^PPid:/ { print $2 }' "$d/status" 2>/dev/null)
        case " $seen " in
        *" $pid "*) ;;
        *) grep -q "$q go" "/proc/$pp/cmdline" 2>/dev/null || { kill "$pid" 2>/dev/null && k=1 && seen="$seen $pid"; } ;;
        esac
      fi
      if grep -q "$p/stderr" "$d/cmdline" 2>/dev/null; then kill "${d#/proc/}" 2>/dev/null; fi
    done
    i=$((i+1)); [ $k = 0 ] && sleep 0.05
  done
  [ $k = 0 ] && break
  n=$((n+1))
done
echo "$n $round"; echo written >out.txt`)
	spec.Worktree = &sandbox.Mount{Host: worktree, Container: sandbox.WorkspacePath}
	spec.Timeout = 3 * time.Minute
	res := r.run(t, spec)
	var killed, rounds int
	// An open may fail before its shell runs (the last one's kill still
	// under way), so the agent sees at most primeOpens shells, and many.
	if _, err := fmt.Sscan(string(res.Stdout), &killed, &rounds); err != nil || killed > primeOpens || killed < primeOpens/2 {
		t.Errorf("the agent killed the shells of %q primed copy-outs, want at most %d opened in all, and reopened again and again; stderr %q", res.Stdout, primeOpens, res.Stderr)
	}
	want := ""
	for i := range rounds {
		want += fmt.Sprintf("round %d\n", i)
	}
	if string(res.Stderr) != want {
		t.Errorf("stderr %q, want every round", res.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(worktree, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("out.txt on the host: %q, %v; want the agent's file", b, err)
	}
}
