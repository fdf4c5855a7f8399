package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// An override the bot ignores (unknown key, ill-typed value) is named by
// `alfred settings list` and fails `alfred doctor`.
func TestUnknownOverridesAreListedAndFailDoctor(t *testing.T) {
	env := doctorEnv(t)
	env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"] = "", ""
	code, out, failed := doctorLines(t, env)
	checkDoctor(t, code, out, failed, []string{"config"})
	if !strings.Contains(out, "OK   settings: 0 overrides") {
		t.Errorf("no settings line:\n%s", out)
	}

	st, err := state.Open(context.Background(), env["ALFRED_STATE_DIR"], state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(project, key, value string) state.SettingOverride {
		scope := state.ScopeProject
		if project == "" {
			scope = state.ScopeOrganization
		}
		raw, _ := json.Marshal(value)
		return state.SettingOverride{Scope: scope, Forge: "forgejo", Owner: "alice", Project: project, Key: key, Value: raw, UpdatedAt: time.Now()}
	}
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		for _, o := range []state.SettingOverride{
			put("", "LLM_MAX_RETRIES", "4"),
			put("demo", "RUN_TIMEOUT", "forever"),
			put("demo", "BRANCH_PREFX", "bot/"),
		} {
			if err := tx.PutSetting(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err := errors.Join(err, st.Close()); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := alfred(t, env, "settings", "list")
	if code != 0 {
		t.Fatalf("settings list: %d %q", code, errOut)
	}
	for _, want := range []string{
		"Overrides in the state branch (3, 2 ignored)",
		`project forgejo/alice/demo  BRANCH_PREFX     "bot/"     UNKNOWN setting, ignored`,
		`project forgejo/alice/demo  RUN_TIMEOUT      "forever"  IGNORED: setting RUN_TIMEOUT takes a positive duration`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("settings list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "LLM_MAX_RETRIES  \"4\"  IGNORED") {
		t.Errorf("a good override is flagged:\n%s", out)
	}

	code, out, failed = doctorLines(t, env)
	checkDoctor(t, code, out, failed, []string{"config", "settings", "settings"})
	for _, want := range []string{
		`FAIL settings: project forgejo/alice/demo: BRANCH_PREFX="bot/" ignored: BRANCH_PREFX is not a setting — alfred settings unset BRANCH_PREFX -project forgejo:alice/demo`,
		`FAIL settings: project forgejo/alice/demo: RUN_TIMEOUT="forever" ignored`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
}

func TestSettingsAndStateCommands(t *testing.T) {
	env := map[string]string{
		"ALFRED_STATE_DIR": filepath.Join(t.TempDir(), "state.git"),
		"ALFRED_FORGE":     "forgejo",
		"ALFRED_FORGE_URL": "http://127.0.0.1:1",
	}
	if code, out, errOut := alfred(t, env, "settings", "set", "AGENT_SESSION_RESUME", "off", "-project", "alice/demo"); code != 1 || !strings.Contains(errOut, "true or false") {
		t.Fatalf("a wrong type was accepted: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := alfred(t, env, "settings", "set", "NO_SUCH_KEY", "1", "-org", "alice"); code != 1 || !strings.Contains(errOut, "unknown setting") {
		t.Fatalf("an unknown key was accepted: %d %q", code, errOut)
	}
	if code, _, errOut := alfred(t, env, "settings", "set", "AGENT_SESSION_RESUME", "1"); code != 2 || !strings.Contains(errOut, "-org") {
		t.Fatalf("a missing scope was accepted: %d %q", code, errOut)
	}
	if code, out, errOut := alfred(t, env, "settings", "set", "-project", "alice/demo", "AGENT_SESSION_RESUME", "FALSE"); code != 0 || !strings.Contains(out, "AGENT_SESSION_RESUME = false at project scope") {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	for _, tt := range []struct{ scope, want string }{{"-project=alice/demo", "false"}, {"-project=alice/other", "true"}, {"-org=alice", "true"}} {
		code, out, errOut := alfred(t, env, "settings", "get", "AGENT_SESSION_RESUME", tt.scope)
		if code != 0 || strings.TrimSpace(out) != tt.want {
			t.Errorf("get %s: %d %q %q, want %s", tt.scope, code, out, errOut, tt.want)
		}
	}
	code, out, _ := alfred(t, env, "state", "log", "-n", "5")
	if code != 0 || !strings.Contains(out, "settings/project/forgejo/alice/demo/AGENT_SESSION_RESUME.json") {
		t.Errorf("state log: %d %q", code, out)
	}
	code, out, _ = alfred(t, env, "state", "show", "settings/project/forgejo/alice/demo/AGENT_SESSION_RESUME.json")
	if code != 0 || !strings.Contains(out, `"value": "false"`) {
		t.Errorf("state show: %d %q", code, out)
	}
	if code, _, _ := alfred(t, env, "settings", "unset", "AGENT_SESSION_RESUME", "-project", "alice/demo"); code != 0 {
		t.Fatalf("unset: %d", code)
	}
	if _, out, _ := alfred(t, env, "settings", "get", "AGENT_SESSION_RESUME", "-project", "alice/demo"); strings.TrimSpace(out) != "true" {
		t.Errorf("after unset: %q", out)
	}
	if code, out, _ := alfred(t, env, "settings", "list"); code != 0 || !strings.Contains(out, "REQUIRE_PLAN_VALIDATION") {
		t.Errorf("settings list: %d %q", code, out)
	}
}

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
