package agents_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
)

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in       string
		lines, n int
		want     string
	}{
		{"short", "one\ntwo", 10, 100, "one\ntwo"},
		{"lines", "one\ntwo\nthree", 2, 100, "one\ntwo…"},
		{"exactly the lines, trailing newline", "one\ntwo\n", 2, 100, "one\ntwo\n"},
		{"bytes", "abcdef", 0, 4, "abcd…"},
		{"rune boundary", "aé", 0, 2, "a…"},
		{"trailing space before the marker", "ab  cd", 0, 4, "ab…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := agents.Clip(tt.in, tt.lines, tt.n); got != tt.want {
				t.Errorf("Clip(%q, %d, %d) = %q, want %q", tt.in, tt.lines, tt.n, got, tt.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	long := strings.Repeat("line\n", 50)
	if got := agents.Summary(long); strings.Count(got, "\n") != agents.MaxResultLines-1 || !strings.HasSuffix(got, "…") {
		t.Errorf("Summary of 50 lines = %q, want %d lines ending with …", got, agents.MaxResultLines)
	}
	wide := strings.Repeat("x", 5000)
	if got := agents.Summary(wide); len(got) != agents.MaxResultBytes+len("…") {
		t.Errorf("Summary of 5000 bytes has %d bytes, want %d and the marker", len(got), agents.MaxResultBytes)
	}
	if got := agents.Summary("ok\n\n"); got != "ok" {
		t.Errorf("Summary(%q) = %q, want %q", "ok\n\n", got, "ok")
	}
}

func TestArgs(t *testing.T) {
	for _, tt := range []struct{ name, raw, want string }{
		{"object", `{ "a": 1,  "b": "x" }`, `{"a":1,"b":"x"}`},
		{"string holding JSON", `"{\"cmd\": \"ls\"}"`, `{"cmd":"ls"}`},
		{"free text", `"*** Begin Patch"`, `"*** Begin Patch"`},
		{"not JSON", `{oops`, `{oops`},
		{"empty", ``, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := agents.Args([]byte(tt.raw)); got != tt.want {
				t.Errorf("Args(%s) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestTranscriptLines(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		want       []string
	}{
		{"lines", "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}},
		{"blank lines and CRLF", "{\"a\":1}\r\n\n  \n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}},
		{"torn last line", "{\"a\":1}\n{\"b\":", []string{`{"a":1}`}},
		{"bad middle line kept", "{\"a\":1}\nnot json\n{\"b\":2}\n", []string{`{"a":1}`, "not json", `{"b":2}`}},
		{"empty", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range agents.TranscriptLines([]byte(tt.data)) {
				got = append(got, string(l))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("TranscriptLines(%q) = %q, want %q", tt.data, got, tt.want)
			}
		})
	}
}

// TestTranscriptReaders: every CLI that resumes sessions reads them back;
// ReadTranscript says so for an adapter that does not.
func TestTranscriptReaders(t *testing.T) {
	for _, c := range clis {
		d := c.Descriptor()
		_, reads := c.CLI.(agents.TranscriptReader)
		if resumes := d.SessionStatePath != ""; reads != resumes {
			t.Errorf("%s: resumes sessions %v, reads transcripts %v", d.ID, resumes, reads)
		}
		a, err := c.new()
		if err != nil {
			t.Fatal(err)
		}
		want := agents.ErrNoTranscript
		if !reads {
			want = agents.ErrNoTranscriptReader
		}
		if _, err := agents.ReadTranscript(a, t.TempDir(), "0b0e7c2e-0000-4000-8000-000000000000"); !errors.Is(err, want) {
			t.Errorf("%s: ReadTranscript of an empty folder: %v, want %v", d.ID, err, want)
		}
	}
	f, err := fake.New(fake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agents.ReadTranscript(f, t.TempDir(), "x"); !errors.Is(err, agents.ErrNoTranscriptReader) {
		t.Errorf("fake adapter: ReadTranscript: %v, want ErrNoTranscriptReader", err)
	}
}

// FuzzTranscriptLines: the lines are the non-blank lines of the input,
// the last one left out exactly when it is not JSON.
func FuzzTranscriptLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":"))
	f.Add([]byte("x\n\n{}\r\n"))
	f.Add([]byte("A\nA"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				want = append(want, l)
			}
		}
		if n := len(want); n > 0 && !json.Valid(want[n-1]) {
			want = want[:n-1]
		}
		if got := agents.TranscriptLines(data); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("TranscriptLines(%q) = %q, want %q", data, got, want)
		}
	})
}
