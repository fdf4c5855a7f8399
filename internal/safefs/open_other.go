//go:build !linux

package safefs

import (
	"os"
	"syscall"
)

// openFile opens rel, already Lstat'ed, for reading through root, without
// waiting for a FIFO's writer. os.Root never leaves the folder but may
// follow a symlink swapped in after the Lstat to a file inside it; the
// caller's fstat still refuses anything but a regular file.
func openFile(root *os.Root, rel string) (*os.File, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	return f, nil
}
