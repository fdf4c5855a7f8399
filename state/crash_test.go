package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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

// TestMain lets the test binary act as the writer child of TestCrash and the
// lock holder of TestLockAgainstSecondProcess.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	if dir := os.Getenv(lockChildEnv); dir != "" {
		lockChild(dir)
		return
	}
	code := m.Run()
	removeFixtures()
	os.Exit(code)
}

// crashChild writes records from 4 goroutines forever and prints
// "ack <path>" after each Update returned nil.
func crashChild(dir string) {
	s, err := Open(context.Background(), dir, Options{Logger: nil, MergeAt: 4})
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

// TestCrash kills a writer process with SIGKILL at random points, many
// times, and checks after each kill that the store reopens, git fsck is
// clean and every acknowledged write is present.
func TestCrash(t *testing.T) {
	iterations := 20
	if testing.Short() {
		iterations = 5
	}
	dir := filepath.Join(t.TempDir(), "state.git")
	var acked []string
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	deadline := time.Now().Add(20 * time.Second)
	for it := 0; it < iterations && time.Now().Before(deadline); it++ {
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
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill after a random number of acknowledgements (0 kills during
		// Open and the first commit) plus a random delay.
		wantAcks := rng.IntN(16)
		got := 0
		timeout := time.After(10 * time.Second)
	collect:
		for got < wantAcks {
			select {
			case l, ok := <-lines:
				if !ok {
					break collect
				}
				acked = append(acked, strings.TrimPrefix(l, "ack "))
				got++
			case <-timeout:
				break collect
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			acked = append(acked, strings.TrimPrefix(l, "ack "))
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("iteration %d: child ended with %v, want SIGKILL; stderr:\n%s", it, err, stderr.String())
		}

		s, err := Open(context.Background(), dir, Options{})
		if err != nil {
			t.Fatalf("iteration %d: reopen after kill: %v", it, err)
		}
		for _, p := range acked {
			if _, err := s.Get(p); err != nil {
				t.Fatalf("iteration %d: acknowledged write %s lost: %v", it, p, err)
			}
		}
		if probs := s.Problems(); len(probs) > 0 {
			t.Fatalf("iteration %d: problems after kill: %v", it, probs)
		}
		tip := s.Tip()
		s.Close()
		switch {
		case tip != "":
			fsck(t, dir)
		case len(acked) > 0:
			t.Fatalf("iteration %d: the branch is gone after %d acknowledged writes", it, len(acked))
		default:
			// Killed before the first commit: an empty branch is right.
		}
		t.Logf("iteration %d: killed after %d acks, %d acknowledged in total", it, got, len(acked))
	}
	if len(acked) == 0 {
		t.Fatal("the children acknowledged nothing")
	}
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
