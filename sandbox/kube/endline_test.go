package kube

import (
	"bytes"
	"testing"
)

// TestEndLine: the wrapper's end line is taken out of stdout and its code
// read, however the stream is cut; anything else that looks like it passes.
func TestEndLine(t *testing.T) {
	const mark = "alfred-end-0123456789abcdef"
	tests := []struct {
		name   string
		stream string
		want   string
		code   int
		ended  bool
	}{
		{"output with a newline", "hello\n\n" + mark + " 0\n", "hello\n", 0, true},
		{"output without a newline", "hello\n" + mark + " 3\n", "hello", 3, true},
		{"no output", "\n" + mark + " 127\n", "", 127, true},
		{"killed: no end line", "partial\n", "partial\n", 0, false},
		{"the mark without a code", "a\n" + mark + " x\nb\n" + mark + " 2\n", "a\n" + mark + " x\nb", 2, true},
		{"another run's mark", "\nalfred-end-ffffffffffffffff 0\n\n" + mark + " 0\n", "\nalfred-end-ffffffffffffffff 0\n", 0, true},
		{"an end line cut short", "a\n" + mark + " 1", "a\n" + mark + " 1", 0, false},
		{"a mark followed by a long tail", "\n" + mark + " 1234567890123456789\n", "\n" + mark + " 1234567890123456789\n", 0, false},
		{"written after the end", "a\n" + mark + " 0\nlate\n", "alate\n", 0, true},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 5, 1 << 20} {
			var out bytes.Buffer
			e := newEndLine(&out, mark)
			for b := []byte(tt.stream); len(b) > 0; {
				n := min(chunk, len(b))
				if _, err := e.Write(b[:n]); err != nil {
					t.Fatal(err)
				}
				b = b[n:]
			}
			code, ended := e.Code()
			e.Flush()
			if out.String() != tt.want || code != tt.code || ended != tt.ended {
				t.Errorf("%s (chunks of %d): out %q code %d ended %v, want %q %d %v", tt.name, chunk, out.String(), code, ended, tt.want, tt.code, tt.ended)
			}
			select {
			case <-e.Done():
				if !tt.ended {
					t.Errorf("%s: Done closed without an end line", tt.name)
				}
			default:
				if tt.ended {
					t.Errorf("%s: Done not closed after the end line", tt.name)
				}
			}
		}
	}
}
