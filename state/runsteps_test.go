package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestRunStepsDecode: a run's steps and transcript place go through the
// fast decoder and come back as encoding/json reads them.
func TestRunStepsDecode(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 2, 3, 4, 0, time.UTC)
	tests := []struct {
		name string
		run  Run
	}{
		{"none", Run{ID: "r0", Status: RunSucceeded}},
		{"steps", Run{ID: "r1", Status: RunSucceeded,
			Steps: []RunStep{
				{Kind: "prompt", At: t0, Text: "do it"},
				{Kind: "tool_call", Tool: "Bash", CallID: "c1", Args: `{"command":"ls"}`},
				{Kind: "tool_result", Tool: "Bash", CallID: "c1", Text: "a\nb", Failed: true},
				{Kind: "edit", Tool: "Write", Path: "hello.go"},
			},
			Transcript: &RunTranscript{From: 3, Total: 7, Dropped: 1}}},
		{"note", Run{ID: "r2", Status: RunFailed, Transcript: &RunTranscript{Note: "no transcript of the session"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run.FormatVersion = FormatVersion
			raw, err := json.Marshal(tt.run)
			if err != nil {
				t.Fatal(err)
			}
			fast, _, ok := decodeFastRecord("run", raw, newInterner())
			if !ok {
				t.Fatalf("the fast decoder refused %s", raw)
			}
			if got := *fast.(*Run); !reflect.DeepEqual(got, tt.run) {
				t.Errorf("decoded\n%#v\nwant\n%#v", got, tt.run)
			}
			checkFastDecode(t, raw)
		})
	}
}
