package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCredentialMounts(t *testing.T) {
	dir := t.TempDir()
	claude := filepath.Join(dir, "claude")
	codex := filepath.Join(dir, "codex.json")
	if err := os.Mkdir(claude, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(codex, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name    string
		value   string
		want    CredentialMounts
		wantErr string // substring of the error; "" means success
	}{
		{name: "empty", value: "", want: CredentialMounts{}},
		{name: "blank", value: "  ", want: CredentialMounts{}},
		{
			name:  "one",
			value: "claude-code=" + claude + ":/home/agent/.claude",
			want:  CredentialMounts{"claude-code": {{Host: claude, Container: "/home/agent/.claude", ReadOnly: true}}},
		},
		{
			name:  "several adapters and spaces, paths cleaned",
			value: " claude-code=" + claude + "/:/home/agent/.claude/ , codex=" + codex + ":/home/agent/.codex/auth.json,claude-code=" + codex + ":/home/agent/.claude.json",
			want: CredentialMounts{
				"claude-code": {
					{Host: claude, Container: "/home/agent/.claude", ReadOnly: true},
					{Host: codex, Container: "/home/agent/.claude.json", ReadOnly: true},
				},
				"codex": {{Host: codex, Container: "/home/agent/.codex/auth.json", ReadOnly: true}},
			},
		},
		{name: "relative host path", value: "codex=srv/codex:/home/agent/.codex", wantErr: `host path "srv/codex" is not absolute`},
		{name: "missing host path", value: "codex=" + missing + ":/home/agent/.codex", wantErr: "no such file or directory"},
		{name: "container path outside home", value: "codex=" + claude + ":/etc/codex", wantErr: "is not under /home/agent"},
		{name: "container path is home itself", value: "codex=" + claude + ":/home/agent", wantErr: "is not under /home/agent"},
		{name: "container path escapes home", value: "codex=" + claude + ":/home/agent/../root/.codex", wantErr: "is not under /home/agent"},
		{name: "home prefix without segment", value: "codex=" + claude + ":/home/agentx/.codex", wantErr: "is not under /home/agent"},
		{name: "relative container path", value: "codex=" + claude + ":.codex", wantErr: "is not absolute"},
		{name: "no adapter", value: "=" + claude + ":/home/agent/.codex", wantErr: "want adapter="},
		{name: "no equals", value: claude + ":/home/agent/.codex", wantErr: "want adapter="},
		{name: "no colon", value: "codex=" + claude, wantErr: "exactly one colon"},
		{name: "two colons", value: "codex=" + claude + ":/home/agent/.codex:ro", wantErr: "exactly one colon"},
		{name: "stray comma", value: "codex=" + claude + ":/home/agent/.codex,", wantErr: "empty entry"},
		{name: "adapter with space", value: "co dex=" + claude + ":/home/agent/.codex", wantErr: "space, slash or colon"},
		{name: "overlap within adapter", value: "codex=" + claude + ":/home/agent/.codex,codex=" + codex + ":/home/agent/.codex/auth.json", wantErr: "overlaps /home/agent/.codex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCredentialMounts(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCredentialMounts(%q) error = %v, want one containing %q", tt.value, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCredentialMounts(%q): %v", tt.value, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseCredentialMounts(%q) = %+v, want %+v", tt.value, got, tt.want)
			}
		})
	}
}

func TestPathsOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/home/agent/.claude", "/home/agent/.claude", true},
		{"/home/agent/.claude/", "/home/agent/.claude", true},
		{"/home/agent/.claude", "/home/agent/.claude/projects", true},
		{"/home/agent/.claude/projects", "/home/agent/.claude", true},
		{"/home/agent", "/home/agent/.local/share/opencode", true},
		{"/home/agent/.claude", "/home/agent/.claude-x", false},
		{"/home/agent/.claude-x/projects", "/home/agent/.claude", false},
		{"/home/agent/.codex", "/home/agent/.claude", false},
		{"/home/agent/.claude/../.codex", "/home/agent/.codex/sessions", true},
		{"/", "/home", true},
	}
	for _, tt := range tests {
		if got := PathsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("PathsOverlap(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestCredentialMountsOverlap(t *testing.T) {
	creds := CredentialMounts{
		"claude-code": {{Host: "/srv/claude", Container: "/home/agent/.claude", ReadOnly: true}},
		"codex":       {{Host: "/srv/codex", Container: "/home/agent/.codex/auth.json", ReadOnly: true}},
	}
	tests := []struct {
		adapter, session string
		want             string // container path of the overlapping mount; "" for none
	}{
		{"claude-code", "/home/agent/.claude/projects", "/home/agent/.claude"},
		{"claude-code", "/home/agent/.claude", "/home/agent/.claude"},
		{"claude-code", "/home/agent", "/home/agent/.claude"},
		{"claude-code", "/home/agent/.claude-sessions", ""},
		{"codex", "/home/agent/.codex/sessions", ""},
		{"codex", "/home/agent/.codex", "/home/agent/.codex/auth.json"},
		{"opencode", "/home/agent/.claude/projects", ""}, // another adapter's mounts do not count
	}
	for _, tt := range tests {
		m, ok := creds.Overlap(tt.adapter, tt.session)
		if ok != (tt.want != "") || m.Container != tt.want {
			t.Errorf("Overlap(%q, %q) = %q, %v; want %q", tt.adapter, tt.session, m.Container, ok, tt.want)
		}
	}
}
