package kube

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Timestamps as the kubelet writes them (fixed width, nanoseconds).
const (
	t1 = "2026-12-04T10:00:00.100000000Z"
	t2 = "2026-12-04T10:00:00.200000000Z"
	t3 = "2026-12-04T10:00:01.000000000Z"
)

// TestLogFilterResumes feeds the streams of successive connections to one
// cursor, as followLog does: each later stream repeats the log from the
// second of the last line seen (SinceTime is sent to the second).
func TestLogFilterResumes(t *testing.T) {
	full := t1 + " one\n" + t2 + " two\n" + t3 + " three\n"
	tests := []struct {
		name    string
		streams []string
		want    string
	}{
		{"one stream", []string{full}, "one\ntwo\nthree\n"},
		{"cut after a whole line", []string{t1 + " one\n", full}, "one\ntwo\nthree\n"},
		{"cut inside a timestamp", []string{t1 + " one\n" + t2[:10], full}, "one\ntwo\nthree\n"},
		{"cut inside a line", []string{t1 + " one\n" + t2 + " tw", full}, "one\ntwo\nthree\n"},
		{"cut twice", []string{t1 + " on", t1 + " one\n" + t2 + " two\n" + t3 + " thr", full}, "one\ntwo\nthree\n"},
		{"the later stream starts at the second", []string{t1 + " one\n" + t2 + " two\n", t2 + " two\n" + t3 + " three\n"}, "one\ntwo\nthree\n"},
		{
			"lines sharing a timestamp, cut between them",
			[]string{t1 + " a\n" + t1 + " b\n", t1 + " a\n" + t1 + " b\n" + t1 + " c\n" + t2 + " d\n"},
			"a\nb\nc\nd\n",
		},
		{
			"lines sharing a timestamp, cut inside the second",
			[]string{t1 + " a\n" + t1 + " bb", t1 + " a\n" + t1 + " bbb\n" + t1 + " bbb\n"},
			"a\nbbb\nbbb\n",
		},
		{"identical lines at one instant", []string{t1 + " x\n" + t1 + " x\n", t1 + " x\n" + t1 + " x\n" + t1 + " x\n"}, "x\nx\nx\n"},
		{"a stream that brings nothing new", []string{full, full, t1 + " one\n"}, "one\ntwo\nthree\n"},
		{"a last line without newline", []string{t1 + " one\n" + t2 + " par", t1 + " one\n" + t2 + " partial"}, "one\npartial"},
		{"empty lines and spaces", []string{t1 + " \n" + t2 + "  a b \n", t2 + "  a b \n" + t3 + " \n"}, "\n a b \n\n"},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 7, 1 << 20} {
			cur := &logCursor{}
			var out bytes.Buffer
			for _, s := range tt.streams {
				f := newLogFilter(cur, &out)
				for b := []byte(s); len(b) > 0; {
					n := min(chunk, len(b))
					if _, err := f.Write(b[:n]); err != nil {
						t.Fatalf("%s (chunks of %d): %v", tt.name, chunk, err)
					}
					b = b[n:]
				}
			}
			if out.String() != tt.want {
				t.Errorf("%s (chunks of %d): got %q, want %q", tt.name, chunk, out.String(), tt.want)
			}
		}
	}
}

func TestLogFilterRefusesLinesWithoutTimestamp(t *testing.T) {
	tests := []struct{ name, stream, want string }{
		{"no timestamp", "hello world\n", "bad timestamp"},
		{"no space at all", strings.Repeat("x", 100), "without a timestamp"},
	}
	for _, tt := range tests {
		_, err := newLogFilter(&logCursor{}, &bytes.Buffer{}).Write([]byte(tt.stream))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

func TestLogCursorSince(t *testing.T) {
	c := &logCursor{}
	if c.since() != nil {
		t.Errorf("since() before any line = %v, want nil (the whole log)", c.since())
	}
	c.last, _ = time.Parse(time.RFC3339Nano, t2)
	if got := c.since(); got == nil || !got.Time.Equal(c.last) {
		t.Errorf("since() = %v, want %s", got, t2)
	}
}
