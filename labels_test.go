package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
)

func TestLabelsSyncAgainstForgejo(t *testing.T) {
	fj := forgejotest.NewServer(t)
	env := map[string]string{
		"ALFRED_STATE_DIR":   filepath.Join(t.TempDir(), "state.git"),
		"ALFRED_FORGE":       "forgejo",
		"ALFRED_FORGE_URL":   fj.URL(),
		"ALFRED_FORGE_TOKEN": forgejotest.BotToken,
	}
	code, out, errOut := alfred(t, env, "labels", "sync", "-project", "alice/demo")
	if code != 0 || !strings.Contains(out, "19 labels created, 0 updated") {
		t.Fatalf("first sync: %d %q %q", code, out, errOut)
	}
	if code, out, _ := alfred(t, env, "labels", "sync", "-project", "alice/demo"); code != 0 || !strings.Contains(out, "0 labels created, 0 updated, 19 already right") {
		t.Fatalf("second sync is not idempotent: %d %q", code, out)
	}
	if code, _, errOut := alfred(t, env, "labels", "sync"); code != 2 || !strings.Contains(errOut, "-project") {
		t.Fatalf("missing project: %d %q", code, errOut)
	}
	env["ALFRED_FORGE_TOKEN"] = "wrong-token-0000"
	if code, _, errOut := alfred(t, env, "labels", "sync", "-project", "alice/demo"); code != 1 || strings.Contains(errOut, "wrong-token-0000") {
		t.Fatalf("bad token: %d %q", code, errOut)
	}
}
