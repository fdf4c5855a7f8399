// Package logtest keeps what a logger was given, for tests that check the
// log: a Book is a slog.Handler that records, and answers what was said.
package logtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Book records the records a logger handles. Its zero value keeps them all.
type Book struct {
	// Min, when set, is the lowest level kept; nil keeps every record.
	Min slog.Leveler

	mu   sync.Mutex
	recs []slog.Record
}

// Enabled implements slog.Handler.
func (b *Book) Enabled(_ context.Context, l slog.Level) bool {
	return b.Min == nil || l >= b.Min.Level()
}

// Handle implements slog.Handler.
func (b *Book) Handle(_ context.Context, r slog.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recs = append(b.recs, r)
	return nil
}

// WithAttrs implements slog.Handler (the attributes are not kept).
func (b *Book) WithAttrs([]slog.Attr) slog.Handler { return b }

// WithGroup implements slog.Handler (the group is not kept).
func (b *Book) WithGroup(string) slog.Handler { return b }

// records is a copy of what was recorded so far.
func (b *Book) records() []slog.Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]slog.Record(nil), b.recs...)
}

// Find returns the level of the first record with msg and every attribute
// key=value given in kv, and whether there is one.
func (b *Book) Find(msg string, kv ...string) (slog.Level, bool) {
	for _, r := range b.records() {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			ok = ok && attrs[kv[i]] == kv[i+1]
		}
		if ok {
			return r.Level, true
		}
	}
	return 0, false
}

// Levels returns the levels of the records with msg, in order.
func (b *Book) Levels(msg string) []slog.Level {
	var out []slog.Level
	for _, r := range b.records() {
		if r.Message == msg {
			out = append(out, r.Level)
		}
	}
	return out
}

// Count returns how many records at level or above hold substr in their
// message.
func (b *Book) Count(level slog.Level, substr string) int {
	n := 0
	for _, r := range b.records() {
		if r.Level >= level && strings.Contains(r.Message, substr) {
			n++
		}
	}
	return n
}

// Text is every record, a line each (level, message, attributes), for
// failure messages and checks that a secret was never logged.
func (b *Book) Text() string {
	var s strings.Builder
	for _, r := range b.records() {
		s.WriteString(r.Level.String() + " " + r.Message)
		r.Attrs(func(a slog.Attr) bool { s.WriteString(" " + a.String()); return true })
		s.WriteString("\n")
	}
	return s.String()
}
