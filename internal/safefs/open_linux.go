package safefs

import (
	"os"
	"path"
	"syscall"
)

// openFlags open the final component for reading only: never through a
// symlink, never waiting for a FIFO's writer, never as a terminal.
const openFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// openFile opens rel, already Lstat'ed, for reading: its folder through
// root (which never leaves it), the file itself with openat(2) on the
// folder's descriptor and openFlags, so that a symlink swapped in at the
// last moment is refused (ELOOP), not followed.
func openFile(root *os.Root, rel string) (*os.File, error) {
	parent, err := root.Open(path.Dir(rel))
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	defer parent.Close()
	raw, err := parent.SyscallConn()
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	fd := -1
	var openErr error
	err = raw.Control(func(dirfd uintptr) {
		for {
			fd, openErr = syscall.Openat(int(dirfd), path.Base(rel), openFlags, 0)
			if openErr != syscall.EINTR {
				return
			}
		}
	})
	if err == nil {
		err = openErr
	}
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	return os.NewFile(uintptr(fd), rel), nil
}
