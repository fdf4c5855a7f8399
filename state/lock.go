package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrLocked is wrapped by the error Open returns when another Store (in this
// process or another) holds the repository.
var ErrLocked = errors.New("state repository is locked by another store")

// lockFile takes an exclusive flock on {repo}/alfred.lock and records the
// holder's pid in it. flock locks belong to the open file, so a second Store
// in the same process is refused too.
func lockFile(repo string) (*os.File, error) {
	path := filepath.Join(repo, "alfred.lock")
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
