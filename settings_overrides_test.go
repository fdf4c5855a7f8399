package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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
