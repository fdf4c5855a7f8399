package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayRefuses: `alfred replay` refuses what it cannot replay before
// it touches a forge or a daemon: no corpus, a corpus that does not
// validate (the error names the file), no Forgejo forge or no admin token,
// an adapter that does not exist.
func TestReplayRefuses(t *testing.T) {
	bad := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(bad, "a", "repo"), 0o755))
	must(os.WriteFile(filepath.Join(bad, "a", "repo", "f"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(bad, "a", "case.json"), []byte(`{"title": "t", "check": ["true"], "oops": 1}`), 0o644))
	forge := map[string]string{"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "http://127.0.0.1:9", "ALFRED_FORGE_TOKEN": "t"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{"no corpus", nil, nil, 2, "replay takes -corpus DIR"},
		{"a bad corpus", []string{"-corpus", bad}, nil, 1, `a/case.json: json: unknown field "oops"`},
		{"no forge", []string{"-corpus", "replay/testdata/corpus"}, map[string]string{"ALFRED_REPLAY_ADMIN_TOKEN": "x"}, 1, "one Forgejo or Gitea forge"},
		{"no admin token", []string{"-corpus", "replay/testdata/corpus"}, forge, 1, "ALFRED_REPLAY_ADMIN_TOKEN"},
		{"no such adapter", []string{"-corpus", "replay/testdata/corpus", "-adapter", "claude-code, nope", "-work", t.TempDir()}, withToken(forge), 2, `-adapter: "nope" is not an adapter`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"ALFRED_FORGE", "ALFRED_FORGE_URL", "ALFRED_FORGE_TOKEN", "ALFRED_REPLAY_ADMIN_TOKEN", "ALFRED_CONFIG"} {
				t.Setenv(k, tc.env[k])
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"replay"}, tc.args...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, want %d; stderr %q lacks %q", code, tc.code, stderr.String(), tc.want)
			}
		})
	}
}

// withToken is env with an admin token.
func withToken(env map[string]string) map[string]string {
	out := map[string]string{"ALFRED_REPLAY_ADMIN_TOKEN": "x"}
	for k, v := range env {
		out[k] = v
	}
	return out
}
