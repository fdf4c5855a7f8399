package kube

import (
	"os"
	"syscall"
)

// fileOwner is the uid owning a file.
func fileOwner(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
