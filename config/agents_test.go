package config

import (
	"io"
	"maps"
	"strings"
	"testing"
	"time"
)

// TestAgentDetectionSettings: the detection interval, the widened verified
// ranges and the admins, as given and as refused.
func TestAgentDetectionSettings(t *testing.T) {
	c, err := Load("serve", nil, env(nil), io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	if c.AgentDetectInterval != time.Hour || len(c.AgentVerifiedRanges) != 0 || len(c.Admins) != 0 {
		t.Fatalf("defaults: interval %s, ranges %v, admins %q", c.AgentDetectInterval, c.AgentVerifiedRanges, c.Admins)
	}

	c, err = Load("serve", []string{"-agent-detect-interval", "0"}, env(map[string]string{
		"ALFRED_AGENT_VERIFIED_RANGES": " claude-code=>=2.1.101, <2.3.0 ; codex=>=0.40.0 || 0.39.2;",
		"ALFRED_ADMINS":                "alice, bob",
	}), io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"claude-code": ">=2.1.101, <2.3.0", "codex": ">=0.40.0 || 0.39.2"}
	if c.AgentDetectInterval != 0 || !maps.Equal(c.AgentVerifiedRanges, want) || strings.Join(c.Admins, "/") != "alice/bob" {
		t.Fatalf("given: interval %s, ranges %q, admins %q", c.AgentDetectInterval, c.AgentVerifiedRanges, c.Admins)
	}
	if err := c.CheckVerifiedRanges([]string{"claude-code", "codex", "gemini"}); err != nil {
		t.Errorf("known adapters refused: %v", err)
	}
	for _, e := range c.Describe() {
		if e.Name == "ALFRED_AGENT_VERIFIED_RANGES" && e.Value != "claude-code=>=2.1.101, <2.3.0;codex=>=0.40.0 || 0.39.2" {
			t.Errorf("described as %q", e.Value)
		}
	}
}

func TestAgentDetectionSettingsRefused(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"negative interval", map[string]string{"ALFRED_AGENT_DETECT_INTERVAL": "-1m"}, []string{"ALFRED_AGENT_DETECT_INTERVAL", "negative"}},
		{"interval not a duration", map[string]string{"ALFRED_AGENT_DETECT_INTERVAL": "hourly"}, []string{"ALFRED_AGENT_DETECT_INTERVAL", "not a duration"}},
		{"bad constraint", map[string]string{"ALFRED_AGENT_VERIFIED_RANGES": "claude-code=>=two"}, []string{"ALFRED_AGENT_VERIFIED_RANGES", "claude-code", `">=two" is not a semver constraint`}},
		{"no constraint", map[string]string{"ALFRED_AGENT_VERIFIED_RANGES": "claude-code="}, []string{"ALFRED_AGENT_VERIFIED_RANGES", "want adapter=constraint"}},
		{"no adapter", map[string]string{"ALFRED_AGENT_VERIFIED_RANGES": ">=1.0.0"}, []string{"ALFRED_AGENT_VERIFIED_RANGES", "want adapter=constraint"}},
		{"comma-separated entries", map[string]string{"ALFRED_AGENT_VERIFIED_RANGES": "claude-code=>=2.0.0,codex=>=0.40.0"}, []string{"ALFRED_AGENT_VERIFIED_RANGES", "not a semver constraint", "';'-separated"}},
		{"adapter twice", map[string]string{"ALFRED_AGENT_VERIFIED_RANGES": "codex=>=0.40.0;codex=<1"}, []string{"ALFRED_AGENT_VERIFIED_RANGES", "codex is given twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("serve", nil, env(tt.env), io.Discard, testKinds)
			if err == nil {
				t.Fatal("Load accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestCheckVerifiedRangesNamesAnUnknownAdapter(t *testing.T) {
	c, err := Load("serve", nil, env(map[string]string{"ALFRED_AGENT_VERIFIED_RANGES": "claude=>=2.0.0"}), io.Discard, testKinds)
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckVerifiedRanges([]string{"claude-code", "codex"})
	if err == nil {
		t.Fatal("an unknown adapter was accepted")
	}
	for _, w := range []string{"ALFRED_AGENT_VERIFIED_RANGES", `unknown adapter "claude"`, "claude-code, codex"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
