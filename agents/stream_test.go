package agents

import (
	"encoding/json"
	"slices"
	"testing"
)

// streamCLI decodes {"say":..} lines; a line {"panic":true} makes it panic.
type streamCLI struct {
	stubCLI
	progress *bool // nil: no ProgressReporter
}

func (streamCLI) DecodeLine(line []byte) ([]Step, bool) {
	var e struct {
		Say   *string
		Panic bool
	}
	if !JSONObject(line, &e) {
		return nil, false
	}
	if e.Panic {
		panic("decoder bug")
	}
	if e.Say == nil {
		return nil, true
	}
	return Steps(StepAssistant, *e.Say), true
}

// progressCLI is a streamCLI that says whether it reports progress.
type progressCLI struct{ streamCLI }

func (p progressCLI) ReportsProgress() bool { return *p.progress }

// TestLocalDecodeLine: a CLI's decoder through its adapter; a CLI without
// one decodes nothing; a decoder that panics leaves the line as text.
func TestLocalDecodeLine(t *testing.T) {
	local := func(cli CLI) *Local {
		l, err := NewLocal(cli)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tests := []struct {
		name  string
		cli   CLI
		line  string
		steps []Step
		ok    bool
	}{
		{"an event", streamCLI{}, `{"say":"hi"}`, []Step{{Kind: StepAssistant, Text: "hi"}}, true},
		{"bookkeeping", streamCLI{}, `{"x":1}`, nil, true},
		{"no event", streamCLI{}, `npm warn`, nil, false},
		{"a decoder that panics", streamCLI{}, `{"panic":true}`, nil, false},
		{"no decoder", stubCLI{}, `{"say":"hi"}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, ok := local(tt.cli).DecodeLine([]byte(tt.line))
			if ok != tt.ok || !slices.Equal(steps, tt.steps) {
				t.Errorf("DecodeLine = %+v, %v; want %+v, %v", steps, ok, tt.steps, tt.ok)
			}
		})
	}
	yes, no := true, false
	for cli, want := range map[CLI]bool{
		stubCLI{}: false, streamCLI{}: true,
		progressCLI{streamCLI{progress: &no}}: false, progressCLI{streamCLI{progress: &yes}}: true,
	} {
		if got := local(cli).ReportsProgress(); got != want {
			t.Errorf("%T ReportsProgress = %v, want %v", cli, got, want)
		}
	}
}

// TestJSONObject: one JSON object, a field of another type left zero.
func TestJSONObject(t *testing.T) {
	type v struct {
		Type string `json:"type"`
		N    int    `json:"n"`
	}
	tests := []struct {
		line string
		want v
		ok   bool
	}{
		{`{"type":"a","n":2}`, v{"a", 2}, true},
		{`  {"type":"a","n":"two"}  `, v{Type: "a"}, true},
		{`{"type":"a"`, v{}, false},
		{`[{"type":"a"}]`, v{}, false},
		{`text`, v{}, false},
		{``, v{}, false},
	}
	for _, tt := range tests {
		var got v
		if ok := JSONObject([]byte(tt.line), &got); ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("JSONObject(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
	if CallStep("Bash", "c", json.RawMessage("null")).Args != "" {
		t.Error("null arguments are kept")
	}
}
