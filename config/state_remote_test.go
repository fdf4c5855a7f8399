package config

import (
	"io"
	"strings"
	"testing"
)

func TestStateRemote(t *testing.T) {
	for _, tt := range []struct {
		value string
		ok    bool
	}{
		{"", true},
		{"https://bot:tok-s3cret@forge.example/alfred/alfred-state.git", true},
		{"http://127.0.0.1:3000/alfred/alfred-state.git", true},
		{"ssh://git@forge.example/alfred/alfred-state.git", true},
		{"git@forge.example:alfred/alfred-state.git", true},
		{"/srv/backup/alfred-state.git", true},
		{"file:///srv/backup/alfred-state.git", true},
		{"https://", false},
		{"alfred-state", false},
		{":nohost", false},
	} {
		c, err := Load("serve", nil, env(map[string]string{"ALFRED_STATE_REMOTE": tt.value}), io.Discard, testKinds)
		if (err == nil) != tt.ok {
			t.Errorf("ALFRED_STATE_REMOTE=%q: %v, want accepted: %v", tt.value, err, tt.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "ALFRED_STATE_REMOTE") {
				t.Errorf("the error does not name the setting: %v", err)
			}
			continue
		}
		if c.StateRemote != tt.value {
			t.Errorf("StateRemote = %q, want %q", c.StateRemote, tt.value)
		}
		for _, e := range c.Describe() {
			if e.Name == "ALFRED_STATE_REMOTE" && strings.Contains(e.Value, "tok-s3cret") {
				t.Errorf("the configuration page shows the remote's token: %q", e.Value)
			}
		}
	}
}
