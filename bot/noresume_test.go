package bot

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/internal/logtest"

	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/state"
)

// logHandler is where the harness's engine logs.
func (su setup) logHandler() slog.Handler {
	if su.logs != nil {
		return su.logs
	}
	return slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: testLogLevel()})
}

// TestCannotResumeSaysWhyInOneLine: when the detected CLI is outside its
// verified range (the adapter's, or one widened by ALFRED_AGENT_VERIFIED_RANGES
// with "||" in it), or a credential mount shadows the session path, the run
// goes on without a session; the status comment says why in one line of its
// table, and the log says so at info level.
func TestCannotResumeSaysWhyInOneLine(t *testing.T) {
	tests := []struct {
		name string
		opt  func(*setup)
		why  string // as logged
		line string // as the status comment shows it
	}{
		{"version outside the range", func(s *setup) {
			s.installation = &state.AgentInstallation{Runner: "image", Image: "alfred-test", Version: "0.9.0",
				Reason: "version 0.9.0 is outside the verified range >=1.0.0"}
		}, "version 0.9.0 is outside the verified range >=1.0.0", "none: version 0.9.0 is outside the verified range >=1.0.0"},
		{"outside a widened range with alternatives", func(s *setup) {
			s.installation = &state.AgentInstallation{Runner: "image", Image: "alfred-test", Version: "3.0.0",
				Reason: "version 3.0.0 is outside the verified range >=1.0.0 <2.0.0 || >=4.0.0"}
		}, "version 3.0.0 is outside the verified range >=1.0.0 <2.0.0 || >=4.0.0",
			`none: version 3.0.0 is outside the verified range >=1.0.0 <2.0.0 \|\| >=4.0.0`},
		{"credential mount over the session path", func(s *setup) {
			s.settings = append(s.settings, projectSetting("AGENT_CREDENTIAL_MOUNTS", fake.ID+"="+os.TempDir()+":/home/agent/.fake"))
		}, "credential mount /home/agent/.fake overlaps the session path " + fake.SessionStatePath,
			"none: credential mount /home/agent/.fake overlaps the session path " + fake.SessionStatePath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			book := &logtest.Book{Min: slog.LevelInfo}
			h := newHarness(t, tt.opt, func(s *setup) { s.logs = book })
			h.assign(7)
			h.waitStatus(7, lifecycle.StatusWaitingValidation)
			var rows []string
			for _, l := range strings.Split(h.statusComment(7), "\n") {
				if strings.Contains(l, "none: ") {
					rows = append(rows, l)
				}
			}
			if len(rows) != 1 || !strings.Contains(rows[0], "| "+tt.line+" |") {
				t.Fatalf("status comment rows without a session: %q, want one saying %q", rows, tt.line)
			}
			// The row keeps the table's 7 column separators: "||" does not split it.
			if n := strings.Count(rows[0], "|") - strings.Count(rows[0], `\|`); n != 7 {
				t.Errorf("row %q has %d column separators, want 7", rows[0], n)
			}
			if level, ok := book.Find("no named session", "why", tt.why); !ok || level != slog.LevelInfo {
				t.Errorf("log 'no named session' why=%q: found %v at %s, want info", tt.why, ok, level)
			}
		})
	}
}
