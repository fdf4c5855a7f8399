package run

import (
	"os"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/fake"
)

// TestReadableLog: what a run's record keeps of a streaming CLI's stdout is
// its steps, one line each, never its raw events; a line that is no event
// stays as it is; an adapter that streams nothing keeps its output whole.
func TestReadableLog(t *testing.T) {
	claude, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := os.ReadFile("../../agents/claudecode/testdata/fresh-write.stdout")
	if err != nil {
		t.Fatal(err)
	}
	got := readable(claude, append(stdout, []byte("a line of its own\n")...))
	for _, want := range []string{"call Write ", "edited ", "assistant: ", "a line of its own"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"type":`) {
		t.Errorf("the log keeps raw events:\n%s", got)
	}
	fa, err := fake.New(fake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readable(fa, []byte(`{"type":"x"}`+"\n")); got != `{"type":"x"}`+"\n" {
		t.Errorf("a CLI that streams nothing: %q", got)
	}
}
