package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/state"
)

// `alfred settings set AGENT_TRIAL` takes arms whose adapters are available
// as the agents screen says (detected on the configured runner, or the API
// adapter when an API is configured) and refuses the others, and a
// malformed value, with the list of the available ones.
func TestSettingsSetAgentTrial(t *testing.T) {
	env := map[string]string{
		"ALFRED_STATE_DIR": filepath.Join(t.TempDir(), "state.git"),
		"ALFRED_FORGE":     "forgejo",
		"ALFRED_FORGE_URL": "http://127.0.0.1:1",
		"ALFRED_RUNNER":    "image",
	}
	detect(t, env["ALFRED_STATE_DIR"],
		state.AgentInstallation{AdapterID: "claude-code", Runner: "image", Image: "alfred-agent", Version: "2.1.200"},
		state.AgentInstallation{AdapterID: "opencode", Runner: "image", Image: "alfred-agent", Version: "1.0.0"},
		state.AgentInstallation{AdapterID: "codex", Runner: "kubernetes", Image: "alfred-agent", Version: "0.50.0"}, // another runner
	)
	for _, tt := range []struct {
		name, value, api string
		want             string // in stderr, or in stdout when ok
		ok               bool
	}{
		{name: "unknown adapter", value: "claude-code:1,nosuch:1",
			want: `AGENT_TRIAL: arm nosuch: no adapter "nosuch" (available: claude-code, opencode)`},
		{name: "not detected on this runner", value: "claude-code:1,codex/gpt-5:1",
			want: "AGENT_TRIAL: arm codex/gpt-5: adapter codex is not detected on the image runner (alfred agents detect; available: claude-code, opencode)"},
		{name: "api not configured", value: "claude-code:1,api:1",
			want: `no adapter "api" (available: claude-code, opencode)`},
		{name: "zero share", value: "claude-code:0,opencode:1", want: `the share "0" is not a whole number from 1 to 100`},
		{name: "duplicate", value: "claude-code:1,claude-code:1", want: `arm "claude-code" is named twice`},
		{name: "available", value: "claude-code/claude-opus-4:2, opencode:1", ok: true,
			want: "AGENT_TRIAL = claude-code/claude-opus-4:2, opencode:1 at project scope"},
		{name: "api configured", value: "api:1,claude-code:1", api: "http://127.0.0.1:1/v1", ok: true,
			want: "AGENT_TRIAL = api:1,claude-code:1 at project scope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env["ALFRED_API_URL"] = tt.api
			code, out, errOut := alfred(t, env, "settings", "set", "AGENT_TRIAL", tt.value, "-project", "alice/demo")
			if tt.ok {
				if code != 0 || !strings.Contains(out, tt.want) {
					t.Fatalf("refused: %d %q %q", code, out, errOut)
				}
				if _, got, _ := alfred(t, env, "settings", "get", "AGENT_TRIAL", "-project", "alice/demo"); strings.TrimSpace(got) != tt.value {
					t.Errorf("get: %q, want %q", got, tt.value)
				}
				return
			}
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("%d %q %q, want refused with %q", code, out, errOut, tt.want)
			}
		})
	}
}

// detect records installations as a detection would.
func detect(t *testing.T, dir string, list ...state.AgentInstallation) {
	t.Helper()
	st, err := state.Open(context.Background(), dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		for _, i := range list {
			i.DetectedAt = time.Now()
			if err := tx.PutInstallation(i); err != nil {
				return err
			}
		}
		return nil
	})
	if err := errors.Join(err, st.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorSaysATrialArmIsUnavailable: an AGENT_TRIAL set while its
// adapters were available, read by the doctor of an Alfred where one is
// not (here: on another runner, where only codex was detected), fails a
// settings line naming the scope, the arm and what is available; with its
// adapters available, the settings line passes.
func TestDoctorSaysATrialArmIsUnavailable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.git")
	env := map[string]string{"ALFRED_STATE_DIR": dir, "ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "http://127.0.0.1:1", "ALFRED_RUNNER": "image"}
	detect(t, dir,
		state.AgentInstallation{AdapterID: "claude-code", Runner: "image", Image: "alfred-agent", Version: "2.1.200"},
		state.AgentInstallation{AdapterID: "opencode", Runner: "image", Image: "alfred-agent", Version: "1.0.0"},
		state.AgentInstallation{AdapterID: "codex", Runner: "kubernetes", Image: "alfred-agent", Version: "0.50.0"},
	)
	if code, out, errOut := alfred(t, env, "settings", "set", "AGENT_TRIAL", "claude-code:1,opencode:1", "-project", "alice/demo"); code != 0 {
		t.Fatalf("settings set: %d %q %q", code, out, errOut)
	}
	lines := func(runner string) (fail []string) {
		for _, l := range (&doctor{c: &config.Config{StateDir: dir, Runner: runner}}).checkSettings(context.Background()) {
			if !l.OK {
				fail = append(fail, l.String())
			}
		}
		return fail
	}
	if fail := lines("image"); len(fail) != 0 {
		t.Errorf("with its adapters available: %q", fail)
	}
	fail := lines("kubernetes")
	want := "AGENT_TRIAL: arm claude-code: adapter claude-code is not detected on the kubernetes runner (alfred agents detect; available: codex); its issues' runs fail at start"
	if len(fail) != 1 || !strings.Contains(fail[0], "alice/demo") || !strings.Contains(fail[0], want) {
		t.Errorf("the doctor's settings lines %q, want one naming alice/demo and %q", fail, want)
	}
}
