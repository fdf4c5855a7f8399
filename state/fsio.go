package state

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The commit path uses plain system calls on file descriptors: an os.File
// costs four fcntl calls and a refused epoll registration per open, a
// noticeable share of a commit next to its two syncs.

// createFile creates path, which must not exist, with data and returns its
// open descriptor; on failure nothing is left at path.
func createFile(path string, data []byte, mode uint32) (int, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, mode)
	})
	if err != nil {
		return -1, &os.PathError{Op: "create", Path: path, Err: err}
	}
	if err := writeAll(fd, data); err != nil {
		unix.Close(fd)
		unix.Unlink(path)
		return -1, &os.PathError{Op: "write", Path: path, Err: err}
	}
	return fd, nil
}

// replaceFile writes data to path through a temporary file renamed over
// it, and returns the descriptor of the new file.
func replaceFile(path string, data []byte, mode uint32) (int, error) {
	tmp := filepath.Join(filepath.Dir(path), "tmp_"+filepath.Base(path))
	unix.Unlink(tmp)
	fd, err := createFile(tmp, data, mode)
	if err != nil {
		return -1, err
	}
	if err := unix.Rename(tmp, path); err != nil {
		unix.Close(fd)
		unix.Unlink(tmp)
		return -1, &os.PathError{Op: "rename", Path: path, Err: err}
	}
	return fd, nil
}

// installNew creates path with data, or replaces it when it exists (an
// object file is named by its content: an earlier attempt may have left
// it), and returns its open descriptor.
func installNew(path string, data []byte, mode uint32) (int, error) {
	fd, err := createFile(path, data, mode)
	if errors.Is(err, unix.EEXIST) {
		return replaceFile(path, data, mode)
	}
	return fd, err
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func fsyncFD(fd int, path string) error {
	if _, err := retryEINTR(func() (int, error) { return 0, unix.Fsync(fd) }); err != nil {
		return &os.PathError{Op: "sync", Path: path, Err: err}
	}
	return nil
}

// syncDirFD fsyncs a folder (syncDir without an os.File).
func syncDirFD(dir string) error {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return fsyncFD(fd, dir)
}

// readSmall reads a small file (a ref) whole.
func readSmall(path string) ([]byte, error) {
	fd, err := retryEINTR(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 128)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}
