package agents

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExcludeWorktreeFiles keeps the agent CLI's own files out of the run's commit:
// it appends the adapter's Capabilities.WorktreeFiles to the info/exclude of
// the working copy in dir, before the agent runs, so that the engine's `git
// add --all` never stages them. The project's .gitignore is not touched, and
// a file the project tracks stays tracked (git applies excludes to untracked
// files only). An adapter without patterns leaves the file as it is. A run
// whose excludes cannot be written fails: it must not commit those files.
func ExcludeWorktreeFiles(dir string, adapter Adapter) error {
	patterns := adapter.Capabilities().WorktreeFiles
	if len(patterns) == 0 {
		return nil
	}
	return appendExcludes(dir, adapter.ID(), patterns)
}

// appendExcludes adds a commented block of patterns to dir/.git/info/exclude
// (the engine's working copies are full clones, so .git is a folder).
func appendExcludes(dir, adapterID string, patterns []string) error {
	path := filepath.Join(dir, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("exclude the %s agent's files: %w", adapterID, err)
	}
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("exclude the %s agent's files: %w", adapterID, err)
	}
	var b strings.Builder
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "# alfred: files the %s agent CLI writes that are not part of the change\n", adapterID)
	for _, p := range patterns {
		b.WriteString(p + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("exclude the %s agent's files: %w", adapterID, err)
	}
	return nil
}
