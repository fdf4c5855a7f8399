package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockHolder: the pid of the process holding the store's lock, and a
// clear error when the lock file names none.
func TestLockHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	st := openStore(t, dir)
	t.Cleanup(func() { st.Close() })
	if pid, err := LockHolder(dir); err != nil || pid != os.Getpid() {
		t.Fatalf("LockHolder = %d, %v; want this process, %d", pid, err, os.Getpid())
	}
	stale := t.TempDir()
	if err := os.WriteFile(filepath.Join(stale, lockName), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LockHolder(stale); err == nil || !strings.Contains(err.Error(), "records no pid") {
		t.Fatalf("unlocked lock file with no pid: %v", err)
	}
}
