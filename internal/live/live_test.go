package live

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const secret = "sk-very-secret-123"

// write writes each chunk to w.
func write(t *testing.T, w io.Writer, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		if n, err := w.Write([]byte(c)); n != len(c) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
}

// texts are the texts of lines.
func texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}

func TestLinesAreRedactedWhole(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"one write", []string{"key=" + secret + "\n"}, []string{"key=[redacted]"}},
		{"a secret split across writes", []string{"key=sk-very-", "secret-123 done\n"}, []string{"key=[redacted] done"}},
		{"split byte by byte", strings.Split("a "+secret+" b\n", ""), []string{"a [redacted] b"}},
		{"several lines in one write", []string{"one\ntwo " + secret + "\nthree\n"}, []string{"one", "two [redacted]", "three"}},
		{"the partial last line waits", []string{"done\nsk-very-sec"}, []string{"done"}},
		{"empty lines are lines", []string{"\n\nx\n"}, []string{"", "", "x"}},
		{"CRLF and carriage returns", []string{"a\r\n10%\r50%\r100%\n"}, []string{"a", "100%"}},
		{"a secret too short to hide stays", []string{"abc\n"}, []string{"abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New([]string{secret, "abc"}, 0)
			write(t, o.Stdout(), tt.chunks...)
			if got := texts(o.Read(0).Lines); !slices.Equal(got, tt.want) {
				t.Errorf("lines %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStdoutAndStderrKeepTheirOwnPartialLines(t *testing.T) {
	o := New([]string{secret}, 0)
	write(t, o.Stdout(), "out sk-very-")
	write(t, o.Stderr(), "err line\n")
	write(t, o.Stdout(), "secret-123\n")
	if got, want := texts(o.Read(0).Lines), []string{"err line", "out [redacted]"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestCloseKeepsPartialLinesAndEnds(t *testing.T) {
	o := New([]string{secret}, 0)
	write(t, o.Stdout(), "first\nlast "+secret)
	o.Close(End{Status: "succeeded", Outcome: "succeeded"})
	o.Close(End{Status: "failed"}) // changes nothing
	write(t, o.Stdout(), "\nlate\n")

	snap := o.Read(0)
	if want := []string{"first", "last [redacted]"}; !slices.Equal(texts(snap.Lines), want) {
		t.Errorf("lines %q, want %q", texts(snap.Lines), want)
	}
	if snap.End == nil || *snap.End != (End{Status: "succeeded", Outcome: "succeeded"}) {
		t.Errorf("end %+v", snap.End)
	}
	if snap.Next != 2 {
		t.Errorf("next %d, want 2", snap.Next)
	}
}

func TestLongLinesAreCutWhereNoSecretIs(t *testing.T) {
	// The secret sits across the place a naive cut at MaxLine would be,
	// and arrives in two writes.
	pad := strings.Repeat("x", MaxLine-5)
	o := New([]string{secret}, 0)
	write(t, o.Stdout(), pad+secret[:9])
	write(t, o.Stdout(), secret[9:]+strings.Repeat("y", 100))
	snap := o.Read(0)
	if len(snap.Lines) == 0 {
		t.Fatal("a line longer than MaxLine is held back whole")
	}
	o.Close(End{Status: "succeeded"})
	all := strings.Join(texts(o.Read(0).Lines), "")
	if strings.Contains(all, "sk-very") || strings.Contains(all, "secret-123") || !strings.Contains(all, "[redacted]") {
		t.Errorf("the cut shows part of the secret: %q", all[len(pad)-10:])
	}
	if want := pad + "[redacted]" + strings.Repeat("y", 100); all != want {
		t.Errorf("joined pieces differ from the line, redacted (%d bytes, want %d)", len(all), len(want))
	}
}

func TestTheTailIsKeptWithinTheBound(t *testing.T) {
	const bound = 10 * (10 + lineOverhead)
	o := New(nil, bound)
	for i := range 100 {
		write(t, o.Stdout(), fmt.Sprintf("line %04d\n", i)) // 9 bytes + overhead each
	}
	snap := o.Read(0)
	if snap.Skipped == 0 || snap.Skipped+len(snap.Lines) != 100 || snap.Next != 100 {
		t.Fatalf("skipped %d, kept %d, next %d", snap.Skipped, len(snap.Lines), snap.Next)
	}
	if got := snap.Lines[len(snap.Lines)-1].Text; got != "line 0099" {
		t.Errorf("last line %q", got)
	}
	size := 0
	for _, l := range snap.Lines {
		size += l.size()
	}
	if size > bound {
		t.Errorf("keeps %d bytes, bound %d", size, bound)
	}
	if got := o.Read(95); got.Skipped != 0 || !slices.Equal(texts(got.Lines), []string{"line 0095", "line 0096", "line 0097", "line 0098", "line 0099"}) {
		t.Errorf("Read(95): %+v", got)
	}
	if got := o.Read(500); len(got.Lines) != 0 || got.Next != 100 {
		t.Errorf("Read past the end: %+v", got)
	}
}

// TestReadersFollowWithoutHoldingTheWriter: a reader that never reads does
// not stop the writer; readers that follow get every line, in order, then
// the end.
func TestReadersFollowWithoutHoldingTheWriter(t *testing.T) {
	o := New([]string{secret}, 0)
	_ = o.Read(0) // a reader that never comes back

	const readers, lines = 3, 500
	var wg sync.WaitGroup
	got := make([][]string, readers)
	ends := make([]*End, readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := 0
			for {
				snap := o.Read(next)
				if snap.Skipped != 0 {
					t.Errorf("reader %d skipped %d lines", r, snap.Skipped)
				}
				got[r] = append(got[r], texts(snap.Lines)...)
				next = snap.Next
				if snap.End != nil {
					ends[r] = snap.End
					return
				}
				<-snap.Changed
			}
		}()
	}
	for i := range lines {
		write(t, o.Stdout(), fmt.Sprintf("%d %s\n", i, secret))
	}
	o.Close(End{Status: "failed", Outcome: "failed: exit 1"})
	wg.Wait()
	for r := range readers {
		if len(got[r]) != lines || got[r][0] != "0 [redacted]" || got[r][lines-1] != fmt.Sprintf("%d [redacted]", lines-1) {
			t.Errorf("reader %d got %d lines (%q…)", r, len(got[r]), got[r][:min(2, len(got[r]))])
		}
		if ends[r] == nil || ends[r].Outcome != "failed: exit 1" {
			t.Errorf("reader %d end %+v", r, ends[r])
		}
	}
}

// TestLastWrite: every write to either stream moves LastWrite, a partial
// line included; a write after Close and an empty write do not.
func TestLastWrite(t *testing.T) {
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		write func(o *Output)
		want  time.Time // base + the clock's ticks at the last counted write
	}{
		{"none yet", func(*Output) {}, time.Time{}},
		{"a line on stdout", func(o *Output) { _, _ = o.Stdout().Write([]byte("a\n")) }, base.Add(time.Second)},
		{"a partial line on stderr", func(o *Output) { _, _ = o.Stderr().Write([]byte("no end")) }, base.Add(time.Second)},
		{"the last of several", func(o *Output) {
			_, _ = o.Stdout().Write([]byte("a\n"))
			_, _ = o.Stderr().Write([]byte("b\n"))
		}, base.Add(2 * time.Second)},
		{"an empty write", func(o *Output) {
			_, _ = o.Stdout().Write([]byte("a\n"))
			_, _ = o.Stdout().Write(nil)
		}, base.Add(time.Second)},
		{"after Close", func(o *Output) {
			_, _ = o.Stdout().Write([]byte("a\n"))
			o.Close(End{Status: "succeeded"})
			_, _ = o.Stdout().Write([]byte("late\n"))
		}, base.Add(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New(nil, 0)
			ticks := 0
			o.now = func() time.Time { ticks++; return base.Add(time.Duration(ticks) * time.Second) }
			tt.write(o)
			if got := o.LastWrite(); !got.Equal(tt.want) {
				t.Errorf("LastWrite %v, want %v", got, tt.want)
			}
		})
	}
}

// decodeTest is a Decoder of a small event stream: {"say":..} is an
// assistant step, {"call":..,"args":{..}} a tool call, {"bookkeeping":..}
// no step, anything else no event.
func decodeTest(line []byte) ([]Line, bool) {
	var e struct {
		Say         *string
		Call        string
		Args        json.RawMessage
		Path        string
		Bookkeeping bool
	}
	if json.Unmarshal(line, &e) != nil {
		return nil, false
	}
	switch {
	case e.Say != nil:
		return []Line{{Kind: "assistant", Text: *e.Say}}, true
	case e.Call != "":
		return []Line{{Kind: "tool_call", Tool: e.Call, Args: string(e.Args)}, {Kind: "edit", Path: e.Path}}, true
	case e.Bookkeeping:
		return nil, true
	}
	return []Line{{Kind: "???", Text: "unknown"}}, true
}

// TestDecodedLines: stdout lines go through the decoder into steps, a line
// that is no event is text, stderr stays text of its own kind, and secrets
// are hidden in every field, escaped in the JSON or not.
func TestDecodedLines(t *testing.T) {
	escaped := `sk-very-\u0073ecret-123` // the secret, one letter escaped
	tests := []struct {
		name   string
		stdout string
		stderr string
		want   []Line
	}{
		{"an assistant step", `{"say":"hello ` + secret + `"}` + "\n", "", []Line{{Kind: "assistant", Text: "hello [redacted]"}}},
		{"an escaped secret in the text", `{"say":"key ` + escaped + `"}` + "\n", "", []Line{{Kind: "assistant", Text: "key [redacted]"}}},
		{"a call and its edit, secrets in args and path", `{"call":"Bash","args":{"command":"echo ` + escaped + `","n":1},"path":"/w/` + secret + `"}` + "\n", "",
			[]Line{{Kind: "tool_call", Tool: "Bash", Args: `{"command":"echo [redacted]","n":1}`}, {Kind: "edit", Path: "/w/[redacted]"}}},
		{"bookkeeping gives nothing", `{"bookkeeping":true}` + "\n", "", nil},
		{"an unknown kind is other", `{"x":1}` + "\n", "", []Line{{Kind: "other", Text: "unknown"}}},
		{"a line that is no event is text", "npm warn " + secret + "\n", "", []Line{{Kind: KindText, Text: "npm warn [redacted]"}}},
		{"a torn event is text", `{"say":"unfinished` + "\n", "", []Line{{Kind: KindText, Text: `{"say":"unfinished`}}},
		{"stderr is never decoded", "", `{"say":"on stderr"}` + "\n", []Line{{Kind: KindStderr, Text: `{"say":"on stderr"}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New([]string{secret}, 0)
			o.Decode(decodeTest)
			write(t, o.Stdout(), tt.stdout)
			write(t, o.Stderr(), tt.stderr)
			if got := o.Read(0).Lines; !slices.Equal(got, tt.want) {
				t.Errorf("lines %+v\nwant  %+v", got, tt.want)
			}
		})
	}
}

// TestLastStep: the last step decoded, redacted, kept after the bound
// dropped its line; text lines and stderr are no step.
func TestLastStep(t *testing.T) {
	o := New([]string{secret}, 3*(lineOverhead+20))
	o.Decode(decodeTest)
	if _, ok := o.LastStep(); ok {
		t.Error("a step before any output")
	}
	if _, ok := o.LastCall(); ok {
		t.Error("a call before any output")
	}
	write(t, o.Stdout(), `{"call":"Bash","args":{"command":"go test ./... `+secret+`"},"path":"a"}`+"\n")
	write(t, o.Stdout(), "plain\n")
	write(t, o.Stderr(), "error\n")
	for range 5 {
		write(t, o.Stdout(), "more text\n")
	}
	want := Line{Kind: "edit", Path: "a"}
	if got, ok := o.LastStep(); !ok || got != want {
		t.Errorf("LastStep = %+v, %v; want %+v", got, ok, want)
	}
	call := Line{Kind: "tool_call", Tool: "Bash", Args: `{"command":"go test ./... [redacted]"}`}
	if got, ok := o.LastCall(); !ok || got != call {
		t.Errorf("LastCall = %+v, %v; want %+v", got, ok, call)
	}
	if snap := o.Read(0); snap.Skipped == 0 {
		t.Fatalf("the bound dropped nothing: %+v", snap)
	}
}

// TestLongTextOfADecodedStream: a line of a decoded stream that is no event
// is read whole, to be decoded, then kept cut to MaxLine, its secrets
// hidden wherever they were.
func TestLongTextOfADecodedStream(t *testing.T) {
	o := New([]string{secret}, 0)
	o.Decode(decodeTest)
	line := strings.Repeat("x", MaxLine-5) + secret + strings.Repeat("y", MaxLine)
	write(t, o.Stdout(), line+"\n")
	got := o.Read(0).Lines
	if len(got) != 1 || got[0].Kind != KindText || len(got[0].Text) > MaxLine+len(" [cut]") ||
		strings.Contains(got[0].Text, "sk-very") || !strings.HasSuffix(got[0].Text, "[cut]") {
		t.Errorf("kept %d lines, the first %.60q… of %d bytes", len(got), got[0].Text, len(got[0].Text))
	}
}

// TestEventTooLongIsDropped: on a decoded stream, an event past
// MaxEventLine is dropped with a note, never shown as raw pieces; the
// next line is decoded as usual.
func TestEventTooLongIsDropped(t *testing.T) {
	o := New(nil, 0)
	o.Decode(decodeTest)
	big := `{"say":"` + strings.Repeat("x", MaxEventLine) + `"}`
	for i := 0; i < len(big); i += 1 << 20 {
		write(t, o.Stdout(), big[i:min(i+1<<20, len(big))])
	}
	write(t, o.Stdout(), "\n"+`{"say":"next"}`+"\n")
	got := o.Read(0).Lines
	want := []Line{{Kind: KindNote, Text: "[a line over 4 MiB not shown]"}, {Kind: "assistant", Text: "next"}}
	if !slices.Equal(got, want) {
		t.Errorf("lines %.200v, want %v", got, want)
	}
}
