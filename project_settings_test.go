package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// The project page's settings are the values the engine resolves, each
// with the scope it comes from.
func TestProjectSettingsSayWhereEachComesFrom(t *testing.T) {
	st, err := state.Open(context.Background(), filepath.Join(t.TempDir(), "state.git"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(scope, project, key, value string) state.SettingOverride {
		raw, _ := json.Marshal(value)
		return state.SettingOverride{Scope: scope, Forge: "forgejo", Owner: "alice", Project: project, Key: key, Value: raw, UpdatedAt: time.Now()}
	}
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		for _, o := range []state.SettingOverride{
			put(state.ScopeOrganization, "", "BRANCH_PREFIX", "bot/"),
			put(state.ScopeOrganization, "", "LLM_MAX_RETRIES", "5"),
			put(state.ScopeProject, "demo", "LLM_MAX_RETRIES", "7"),
			put(state.ScopeProject, "demo", "RUN_TIMEOUT", "not a duration"), // skipped, as the engine skips it
		} {
			if err := tx.PutSetting(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mounts := "claude-code=" + t.TempDir() + ":/home/agent/.claude"
	ps := projectSettings{store: st, defaults: map[string]string{"AGENT_CREDENTIAL_MOUNTS": mounts}}
	list, err := ps.Effective(forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, s := range list {
		got[s.Key] = [2]string{s.Value, s.Source}
	}
	for key, want := range map[string][2]string{
		"BRANCH_PREFIX":           {"bot/", "organization"},
		"LLM_MAX_RETRIES":         {"7", "project"},
		"RUN_TIMEOUT":             {"30m", "default"},
		"AGENT_CREDENTIAL_MOUNTS": {mounts, "service configuration"},
		"AGENT_ADAPTER":           {"claude-code", "default"},
	} {
		if got[key] != want {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
}
