package gitcmd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHardening: what would run a command of someone else's choosing does
// not: a hook in the repository, a global configuration under HOME, and a
// transport the caller did not allow.
func TestHardening(t *testing.T) {
	ctx := context.Background()
	home, repo := t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	t.Setenv("HOME", home)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\tfsmonitor = touch "+marker+"\n[alias]\n\tst = !touch "+marker+"\n"), 0o644)
	if _, err := Run(ctx, Cmd{}, "init", "--quiet", repo); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	identity := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	in := Cmd{Dir: repo, Env: identity}
	for _, args := range [][]string{{"add", "a.txt"}, {"status", "--porcelain"}, {"commit", "--quiet", "-m", "x"}} {
		if _, err := Run(ctx, in, args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	if _, err := Run(ctx, in, "st"); err == nil {
		t.Error("an alias of the global configuration ran")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook or the global configuration ran a command")
	}
	_, err := Run(ctx, in, "ls-remote", "ext::sh -c touch% "+marker)
	if err == nil || !strings.Contains(err.Error(), "transport 'ext' not allowed") {
		t.Fatalf("ext:: transport: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the ext transport ran a command")
	}
}

// TestErrorScrubbed: git's stderr in an error hides the secrets, and the
// exit code is read through the context's wrapping.
func TestErrorScrubbed(t *testing.T) {
	_, err := Run(context.Background(), Cmd{Secrets: []string{"s3cret-token"}}, "rev-parse", "--verify", "s3cret-token")
	var gerr *Error
	if !errors.As(err, &gerr) || strings.Contains(err.Error(), "s3cret-token") || gerr.ExitCode() <= 0 {
		t.Fatalf("error %v (exit %d)", err, gerr.ExitCode())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Errorf("the error does not wrap the exit: %v", err)
	}
}

// TestCredential: the Basic header is valid for the URL's origin alone.
func TestCredential(t *testing.T) {
	got, err := Credential("https://forge.example:3000/o/p.git", "bot", "tok")
	if err != nil || len(got) != 1 || !strings.HasPrefix(got[0], "http.https://forge.example:3000/.extraHeader=Authorization: Basic ") {
		t.Fatalf("Credential = %q, %v", got, err)
	}
	if _, err := Credential("file:///tmp/x", "bot", "tok"); err == nil {
		t.Error("a credential for a file URL")
	}
	if got, _ := Credential("https://x", "bot", ""); got != nil {
		t.Errorf("a credential without a password: %q", got)
	}
	for url, want := range map[string]string{"https://h/x": "https", "git@h:o/p": "ssh", "/srv/x.git": "file", "ssh://h/x": "ssh"} {
		if got := Protocol(url); got != want {
			t.Errorf("Protocol(%q) = %q, want %q", url, got, want)
		}
	}
}
