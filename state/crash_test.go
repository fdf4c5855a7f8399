package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashChildEnv = "ALFRED_STATE_CRASH_CHILD"

// TestMain lets the test binary act as the writer child of TestCrash, the
// lock holder of TestLockAgainstSecondProcess and the measured process of
// BenchmarkRSS.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	if dir := os.Getenv(lockChildEnv); dir != "" {
		lockChild(dir)
		return
	}
	if dir := os.Getenv(rssChildEnv); dir != "" {
		rssChild(dir)
		return
	}
	code := m.Run()
	removeFixtures()
	os.Exit(code)
}

// crashChild writes records from 4 goroutines forever and prints
// "ack <path>" after each Update returned nil.
func crashChild(dir string) {
	s, err := Open(context.Background(), dir, crashOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	pid := os.Getpid()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				path := fmt.Sprintf("acks/p%d/g%d/r%d.json", pid, g, i)
				err := s.Update(context.Background(), func(tx *Tx) error {
					if err := tx.Put(path, map[string]any{"g": g, "i": i, "pad": strings.Repeat("x", i%300)}); err != nil {
						return err
					}
					// A mailbox rewritten by every writer keeps trees shared.
					m := testMailbox(int64(1 + g%2))
					m.LLMRetries = i
					return tx.PutMailbox(m)
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child update:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %s\n", path)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestCrash kills a writer process (SIGKILL) at random points 50 times:
// after a random number of acknowledged writes (none: during Open and its
// repairs) and a random delay, so that the kill lands anywhere in a commit
// (pack, index, ref lock, rename, syncs) or between commits. After each
// kill it reopens the store and checks that every acknowledged write is
// there, that no record is unreadable and that the branch points at a
// complete commit: the store reads the tip, and git fsck --full of the
// repository as the kill left it is clean (run on a hard-linked copy, in
// the background: the store never changes a file in place).
func TestCrash(t *testing.T) {
	iterations := 50
	if testing.Short() {
		iterations = 10
	}
	dir := filepath.Join(t.TempDir(), "state.git")
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	var acked []string
	var checks sync.WaitGroup
	sem := make(chan struct{}, 2)
	for it := 0; it < iterations; it++ {
		acked = append(acked, killChild(t, dir, rng.IntN(12), time.Duration(rng.IntN(2000))*time.Microsecond)...)
		snapshot := filepath.Join(t.TempDir(), "kill")
		if _, err := os.Stat(dir); err != nil {
			continue // killed before it created the repository
		}
		linkTree(t, dir, snapshot)
		if tip := checkAfterKill(t, it, dir, acked); tip != "" {
			checks.Add(1)
			go func() {
				defer checks.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if out, err := exec.Command("git", "--git-dir", snapshot, "fsck", "--full", "--strict", "--no-dangling", "--no-progress").CombinedOutput(); err != nil {
					t.Errorf("kill %d: git fsck: %v\n%s", it, err, out)
				}
			}()
		}
	}
	checks.Wait()
	fsck(t, dir) // and a linear history
	t.Logf("%d kills, %d writes acknowledged in all", iterations, len(acked))
	if len(acked) == 0 {
		t.Fatal("the children acknowledged nothing")
	}
}

// checkAfterKill reopens the store and checks the acknowledged writes; it
// returns the tip.
func checkAfterKill(t *testing.T, it int, dir string, acked []string) string {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("kill %d: reopen: %v", it, err)
	}
	defer s.Close()
	for _, p := range acked {
		if _, err := s.Get(p); err != nil {
			t.Fatalf("kill %d: acknowledged write %s lost: %v", it, p, err)
		}
	}
	if probs := s.Problems(); len(probs) > 0 {
		t.Fatalf("kill %d: problems after the kill: %v", it, probs)
	}
	if s.Tip() == "" && len(acked) > 0 {
		t.Fatalf("kill %d: the branch is gone after %d acknowledged writes", it, len(acked))
	}
	if onDisk, err := readRef(dir); err != nil || onDisk.String() != s.Tip() && s.Tip() != "" {
		t.Fatalf("kill %d: the store read tip %s, the branch is %s (%v)", it, s.Tip(), onDisk, err)
	}
	return s.Tip()
}

// linkTree copies the tree at src to dst with hard links.
func linkTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		return os.Link(p, filepath.Join(dst, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// killChild starts a writer child on dir, kills it with SIGKILL after acks
// acknowledged writes and delay, and returns what it acknowledged.
func killChild(t *testing.T, dir string, acks int, delay time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			lines <- strings.TrimPrefix(sc.Text(), "ack ")
		}
	}()
	var acked []string
	timeout := time.After(10 * time.Second)
	for len(acked) < acks {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the child ended early: %s", stderr.String())
			}
			acked = append(acked, l)
		case <-timeout:
			t.Fatalf("the child acknowledged %d writes in 10s: %s", len(acked), stderr.String())
		}
	}
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	for l := range lines {
		acked = append(acked, l)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want SIGKILL; stderr:\n%s", err, stderr.String())
	}
	return acked
}

const lockChildEnv = "ALFRED_STATE_LOCK_CHILD"

// lockChild opens the store, says so, and holds it until stdin closes.
func lockChild(dir string) {
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
	s.Close()
}

func TestLockAgainstSecondProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	_, err = Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("Open while another process holds the store: %v, want ErrLocked naming pid %d", err, cmd.Process.Pid)
	}
	t.Logf("second process refused: %v", err)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	s.Close()
}
