package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockName is the lock file of a repository: {repo}/alfred.lock.
const lockName = "alfred.lock"

// ErrLocked is wrapped by the error Open returns when another Store (in this
// process or another) holds the repository.
var ErrLocked = errors.New("state repository is locked by another store")

// lockFile takes an exclusive flock on {repo}/alfred.lock and records the
// holder's pid in it. flock locks belong to the open file, so a second Store
// in the same process is refused too.
func lockFile(repo string) (*os.File, error) {
	path := filepath.Join(repo, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := string(bytes.TrimSpace(holder))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("open state %s: %w (holder pid %s, lock file %s)", repo, ErrLocked, pid, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func unlockFile(f *os.File) error {
	if f == nil {
		return nil
	}
	// The pid stays in the file: it is only read while the lock is held.
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return f.Close()
}

// LockHolder finds the process that holds the lock of the repository in dir
// (a writable Store: `alfred serve`). The kernel's list of locks names it as
// this process's pid namespace sees it (a host seeing a server in a
// container); without that list, the pid the lock file records is taken.
func LockHolder(dir string) (pid int, err error) {
	path := filepath.Join(dir, lockName)
	seen, found, err := flockHolder(path)
	switch {
	case err == nil && found && seen > 0:
		return seen, nil
	case err == nil && found:
		return 0, errors.New("the server holding the state store runs in a pid namespace this one cannot see (another container?): run this command beside it, or send it SIGHUP")
	}
	raw, rerr := os.ReadFile(path)
	if rerr != nil {
		return 0, fmt.Errorf("read the state store's lock %s: %w", path, rerr)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
	if perr != nil || pid <= 0 {
		return 0, fmt.Errorf("the lock file %s records no pid of the server holding the state store (%q): send it SIGHUP yourself", path, strings.TrimSpace(string(raw)))
	}
	return pid, nil
}

// flockHolder reads /proc/locks for the flock held on path: its holder's pid
// as this pid namespace sees it (0: another namespace).
func flockHolder(path string) (pid int, found bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, false, err
	}
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 4386 fe:00:10010704 0 EOF ("->" marks a waiter)
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" || fields[5] != id {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil {
			return 0, false, fmt.Errorf("/proc/locks: %q: %w", sc.Text(), err)
		}
		return pid, true, nil
	}
	return 0, false, sc.Err()
}
