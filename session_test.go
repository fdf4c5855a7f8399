package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/claudecode"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/state"
)

// TestSessionExportScrubsEverySecret: every secret setting of the
// configuration (config.Settings marked Secret, so a new one is covered
// the day it is added), every value of ALFRED_AGENT_ENV and a run's
// gateway token are in the session's transcript; `alfred session export`
// writes an archive in which none is found, compressed or not, and prints
// the command that resumes the session at the issue branch.
func TestSessionExportScrubsEverySecret(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"ALFRED_CONFIG": "", "ALFRED_STATE_DIR": filepath.Join(dir, "state.git"), "ALFRED_DATA_DIR": filepath.Join(dir, "data"),
		"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "http://127.0.0.1:3000", "ALFRED_FORGE_NAME": "", "ALFRED_RUNNER": "image", "ALFRED_OAUTH_CLIENT_ID": "client", "ALFRED_API_URL": "http://api.internal/v1",
		"ALFRED_AGENT_ENV": "ANTHROPIC_API_KEY,OPENAI_BASE_URL", "ANTHROPIC_API_KEY": "sk-ant-offered-key-42", "OPENAI_BASE_URL": "http://llm.internal:8080/v1"}
	var secrets []string
	for i, s := range config.Settings {
		if !s.Secret {
			continue
		}
		v := fmt.Sprintf("secret-of-%s-%d-%s", strings.ToLower(s.Env), i, strings.Repeat("x", 32))
		switch s.Env {
		case "ALFRED_WEBHOOK_SECRETS", "ALFRED_SESSION_KEYS":
			v += "," + v + "-second"
			secrets = append(secrets, v+"-second")
		case "ALFRED_STATE_REMOTE":
			v = "https://bot:" + v + "@git.internal/state.git"
		}
		env[s.Env] = v
		secrets = append(secrets, strings.Split(v, ",")[0])
	}
	secrets = append(secrets, env["ANTHROPIC_API_KEY"], env["OPENAI_BASE_URL"], runToken(t))
	mb := putSession(t, env["ALFRED_STATE_DIR"], "6f1c2d3e-native")
	folder, err := botrun.SessionStore{Base: env["ALFRED_DATA_DIR"]}.Ensure(mb, claudecode.ID, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	transcript := ""
	for _, s := range secrets {
		transcript += `{"type":"assistant","message":{"content":"the environment holds ` + s + `"}}` + "\n"
	}
	if err := os.MkdirAll(filepath.Join(folder, "-workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "-workspace", "6f1c2d3e-native.jsonl"), []byte(transcript), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "session.tar.gz")
	code, stdout, stderr := alfred(t, env, "session", "export", "-project", "alice/demo", "-issue", "7", "-o", out)
	if code != 0 {
		t.Fatalf("session export: %d\n%s", code, stderr)
	}
	archive, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(".claude/projects/-workspace/6f1c2d3e-native.jsonl")) || !bytes.Contains(raw, []byte("the environment holds [redacted]")) {
		t.Fatalf("the archive lacks the transcript:\n%s", raw)
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) || bytes.Contains(archive, []byte(s)) || strings.Contains(stdout+stderr, s) {
			t.Errorf("the export shows the secret %q", s)
		}
	}
	want := "git fetch origin agent/issue-7-add-a-greeting && git switch agent/issue-7-add-a-greeting && "
	if !strings.HasPrefix(stdout, want) || !strings.HasSuffix(stdout, "session.tar.gz -C \"$d\" --strip-components=3 && claude --resume 6f1c2d3e-native\n") {
		t.Errorf("command:\n%s", stdout)
	}
	for _, args := range [][]string{
		{"session", "export", "-project", "alice/demo", "-issue", "8", "-o", out},
		{"session", "export", "-project", "alice/demo", "-issue", "7", "-adapter", "grok", "-o", out},
	} {
		if code, _, stderr := alfred(t, env, args...); code != 1 || stderr == "" {
			t.Errorf("%v: %d %q, want a failure that says why", args, code, stderr)
		}
	}
}

// putSession records issue 7 of alice/demo, a run of claude-code and its
// session with native id.
func putSession(t *testing.T, dir, native string) state.Mailbox {
	t.Helper()
	st, err := state.Open(context.Background(), dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mb := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 7, BranchName: "agent/issue-7-add-a-greeting", Status: "in_review"}
	mb.ID = mb.Key().ID()
	name, at := mb.BranchName, time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		return errors.Join(tx.PutMailbox(mb),
			tx.PutRun(state.Run{ID: "run-1", MailboxID: mb.ID, Phase: "development", AdapterID: claudecode.ID, Runner: "image", Status: state.RunSucceeded, CreatedAt: at}),
			tx.PutLLMSession(state.LLMSession{ID: "s-1", RunID: "run-1", MailboxID: mb.ID, AdapterID: claudecode.ID, SessionName: &name, NativeSessionID: &native, CreatedAt: at}))
	})
	if err := errors.Join(err, st.Close()); err != nil {
		t.Fatal(err)
	}
	return mb
}

// runToken is the token of a run's session on a real gateway.
func runToken(t *testing.T) string {
	t.Helper()
	g, err := gateway.New(gateway.Options{Providers: []gateway.Provider{gateway.Anthropic("http://127.0.0.1:1", "sk-ant-gateway")}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Open("run-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Token()
}
