package state

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// probeFor is how long a probe of the disks stands for (Health.Probe).
const probeFor = 2 * time.Second

// Health says whether a store can take writes, for a server's readiness:
// whether its commits succeed (Observe, as Options.Observe is told of each)
// and whether the disks of its folders take a small write (Probe).
type Health struct {
	dirs []string // probed for writes: the store's, and any other the server writes to
	log  *slog.Logger

	mu       sync.Mutex
	failing  error // the last commit's error, until a commit succeeds
	since    time.Time
	failures int
	probed   time.Time // the last probe, kept probeFor
	probeErr error
}

// NewHealth watches the commits of a store and probes dirs for writes.
func NewHealth(log *slog.Logger, dirs ...string) *Health {
	if log == nil {
		log = slog.Default()
	}
	return &Health{dirs: dirs, log: log}
}

// Observe notes whether a commit failed: give it to Options.Observe.
func (h *Health) Observe(_ time.Duration, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil && h.failing == nil:
		h.failing, h.since, h.failures = err, time.Now(), 1
	case err != nil:
		h.failing = err
		h.failures++
	case h.failing != nil:
		h.log.Info("state writes succeed again", "failures", h.failures, "for", time.Since(h.since).Round(time.Millisecond))
		h.failing, h.failures = nil, 0
	}
}

// WriteErr says why state writes fail, nil while they succeed.
func (h *Health) WriteErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing == nil {
		return nil
	}
	return fmt.Errorf("state writes fail since %s (%d failed commits; handled events wait in the journal): %w",
		h.since.UTC().Format(time.RFC3339), h.failures, h.failing)
}

// Ready is nil when the store takes writes: its commits succeed (WriteErr)
// and its folders take a small write (Probe).
func (h *Health) Ready() error {
	if err := h.WriteErr(); err != nil {
		return err
	}
	return h.Probe()
}

// Probe writes and syncs a small file in each folder, at most once per
// probeFor.
func (h *Health) Probe() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.probed) < probeFor {
		return h.probeErr
	}
	h.probed, h.probeErr = time.Now(), nil
	for _, dir := range h.dirs {
		if err := ProbeDir(dir); err != nil {
			h.probeErr = err
			break
		}
	}
	return h.probeErr
}

// ProbeDir writes and syncs a small file in dir, and removes it. A folder
// not made yet passes: nothing lives there.
func ProbeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".alfred-probe-")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("folder %s takes no writes: %w", dir, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		return fmt.Errorf("folder %s takes no writes: %w", dir, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("folder %s takes no writes: %w", dir, err)
	}
	return nil
}

// Writable is nil when this process may write in the store's folder dir.
func Writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("state store %s is not writable: %w", dir, err)
	}
	return nil
}
