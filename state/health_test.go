package state

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthReadiness: not ready while commits fail, saying since when, how
// many and why; ready again once a commit succeeds.
func TestHealthReadiness(t *testing.T) {
	h := NewHealth(slog.New(slog.DiscardHandler), t.TempDir())
	enospc := fmt.Errorf("commit state: write pack: %w", syscall.ENOSPC)
	for i, tt := range []struct {
		commit error // what a commit returned
		want   string
	}{
		{nil, ""},
		{enospc, "state writes fail since"},
		{enospc, "(2 failed commits; handled events wait in the journal): commit state: write pack: no space left on device"},
		{nil, ""},
	} {
		h.Observe(time.Millisecond, tt.commit)
		err := h.Ready()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Fatalf("step %d: Ready() = %v, want %q", i, err, tt.want)
		}
	}
}

// TestProbeDir: a folder that takes a write passes, and so does one not
// made yet; a path that is no folder does not.
func TestProbeDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir  string
		want string
	}{
		{dir, ""},
		{filepath.Join(dir, "not-yet"), ""},
		{file, "takes no writes"},
	} {
		err := ProbeDir(tt.dir)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("ProbeDir(%s) = %v, want %q", tt.dir, err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the probe left files: %v", entries)
	}
	if err := Writable(dir); err != nil {
		t.Errorf("Writable(%s) = %v", dir, err)
	}
	if err := Writable(filepath.Join(dir, "not-yet")); err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Errorf("Writable of a missing folder = %v", err)
	}
}
