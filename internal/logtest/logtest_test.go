package logtest

import (
	"log/slog"
	"strings"
	"testing"
)

// TestBook: the zero Book keeps every level, Min drops what is below it,
// and Find, Levels, Count and Text answer from what was kept.
func TestBook(t *testing.T) {
	all, info := &Book{}, &Book{Min: slog.LevelInfo}
	for _, b := range []*Book{all, info} {
		log := slog.New(b)
		log.Debug("ran", "why", "schedule")
		log.Info("ran", "why", "request", "n", 2)
		log.Warn("push failed", "err", "refused")
	}
	if got := all.Levels("ran"); len(got) != 2 || got[0] != slog.LevelDebug {
		t.Errorf("zero Book levels %v, want debug then info", got)
	}
	if got := info.Levels("ran"); len(got) != 1 || got[0] != slog.LevelInfo {
		t.Errorf("Min info levels %v, want info only", got)
	}
	if l, ok := all.Find("ran", "why", "request", "n", "2"); !ok || l != slog.LevelInfo {
		t.Errorf("Find: %v %v", l, ok)
	}
	if _, ok := all.Find("ran", "why", "never"); ok {
		t.Error("Find matched an attribute value never logged")
	}
	if n := all.Count(slog.LevelWarn, "push"); n != 1 {
		t.Errorf("Count %d, want 1", n)
	}
	if !strings.Contains(all.Text(), "WARN push failed err=refused") {
		t.Errorf("Text:\n%s", all.Text())
	}
}
