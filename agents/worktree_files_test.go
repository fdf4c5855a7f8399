package agents

import "testing"

func TestCapabilitiesValidateWorktreeFiles(t *testing.T) {
	resumable := func(files ...string) Capabilities {
		return Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "/home/agent/.x/sessions", WorktreeFiles: files}
	}
	tests := []struct {
		name string
		caps Capabilities
		ok   bool
	}{
		{"local, a file", Capabilities{Kind: KindLocal, WorktreeFiles: []string{"/.grok/settings.json"}}, true},
		{"local, a folder anywhere", Capabilities{Kind: KindLocal, WorktreeFiles: []string{".cache/", "*.agent.log"}}, true},
		{"resumable, a file", resumable("/.x/state.json"), true},
		{"api", Capabilities{Kind: KindAPI, WorktreeFiles: []string{"/.x"}}, false},
		{"empty", resumable(""), false},
		{"line break", resumable("/.x\n!/src"), false},
		{"carriage return", resumable("/.x\r"), false},
		{"comment", resumable("# /.x"), false},
		{"negation", resumable("!/.x"), false},
		{"leading space", resumable(" /.x"), false},
		{"trailing space", resumable("/.x "), false},
		{"one bad among good", Capabilities{Kind: KindLocal, WorktreeFiles: []string{"/.x", ""}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.caps.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
