package state

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestMergeFailuresLogOnce: a series of failed pack merges (a full disk
// fails every try) logs one warning, the next failures at debug level only,
// and one line when merging succeeds again.
func TestMergeFailuresLogOnce(t *testing.T) {
	var buf bytes.Buffer
	s := &Store{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	full := errors.New("write pack: no space left on device")
	for range 20 {
		s.mergeFailed(32, full)
	}
	s.mergeSucceeded()
	s.mergeSucceeded() // nothing more to say
	s.mergeFailed(32, full)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"level=WARN", "level=INFO msg=\"merge state packs succeeds again\" failures=20", "level=WARN"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q lacks %q", i, lines[i], w)
		}
	}
}
