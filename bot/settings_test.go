package bot

import (
	"strings"
	"testing"
	"time"
)

type mapOverrides map[Scope]map[string]string

func (m mapOverrides) Override(s Scope, key string) (string, bool) {
	v, ok := m[s][key]
	return v, ok
}

func TestSettingsResolveProjectThenOrganizationThenDefault(t *testing.T) {
	org := Scope{Forge: "forgejo", Owner: "alice"}
	proj := Scope{Forge: "forgejo", Owner: "alice", Project: "demo"}
	other := Scope{Forge: "forgejo", Owner: "alice", Project: "other"}
	s := Settings{Overrides: mapOverrides{
		org:  {"AGENT_SESSION_RESUME": "false", "LLM_MAX_RETRIES": "5"},
		proj: {"AGENT_SESSION_RESUME": "true", "BRANCH_PREFIX": "bot/", "LLM_MAX_RETRIES": "lots"},
	}}
	if !s.Bool(proj, "AGENT_SESSION_RESUME") {
		t.Error("the project's true must win over the organization's false")
	}
	if s.Bool(other, "AGENT_SESSION_RESUME") {
		t.Error("another project of the organization must get the organization's false")
	}
	if got := s.String(proj, "BRANCH_PREFIX"); got != "bot/" {
		t.Errorf("BRANCH_PREFIX = %q", got)
	}
	if got := s.String(other, "BRANCH_PREFIX"); got != "agent/" {
		t.Errorf("default BRANCH_PREFIX = %q", got)
	}
	if got := s.Int(proj, "LLM_MAX_RETRIES"); got != 5 {
		t.Errorf("an unparsable project value must fall through to the organization's: got %d", got)
	}
	if got := s.Duration(proj, "RUN_TIMEOUT"); got != 30*time.Minute {
		t.Errorf("RUN_TIMEOUT = %s", got)
	}
	if !(Settings{}).Bool(proj, "REQUIRE_PLAN_VALIDATION") {
		t.Error("without overrides the default (true) applies")
	}
	if _, err := s.Value(proj, "NO_SUCH_SETTING"); err == nil || !strings.Contains(err.Error(), "AGENT_SESSION_RESUME") {
		t.Errorf("unknown key must be refused with the known keys listed: %v", err)
	}
}

func TestSettingParse(t *testing.T) {
	tests := []struct {
		key, in, want, errWant string
	}{
		{"AGENT_SESSION_RESUME", "TRUE", "true", ""},
		{"AGENT_SESSION_RESUME", "0", "false", ""},
		{"AGENT_SESSION_RESUME", "yes please", "", "true or false"},
		{"LLM_MAX_RETRIES", " 3 ", "3", ""},
		{"LLM_MAX_RETRIES", "3.5", "", "whole number"},
		{"LLM_MAX_RETRIES", "-1", "", "outside 0 to 20"},
		{"RUN_TIMEOUT", "90s", "1m30s", ""},
		{"RUN_TIMEOUT", "0s", "", "positive duration"},
		{"BRANCH_PREFIX", "bots/", "bots/", ""},
		{"BRANCH_PREFIX", "a..b/", "", "git branch"},
		{"AGENT_ADAPTER", " ", "", "empty"},
		{"AGENT_CREDENTIAL_MOUNTS", "claude-code=relative:/home/agent/.claude", "", "AGENT_CREDENTIAL_MOUNTS"},
	}
	for _, tt := range tests {
		d, err := LookupSetting(tt.key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Parse(tt.in)
		if tt.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errWant) {
				t.Errorf("%s=%q: error %v, want one saying %q", tt.key, tt.in, err, tt.errWant)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s=%q: got %q, %v; want %q", tt.key, tt.in, got, err, tt.want)
		}
	}
}
