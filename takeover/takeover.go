// Package takeover owns a person taking an agent's session over: the
// archive of one CLI's session folder of one issue, and the exact command
// that continues that session on the person's own machine at the issue
// branch. The run page's "continue this session yourself" and `alfred
// session export` both use it.
//
// The session folder was written by the agent: it is read as untrusted
// data (internal/safefs: through os.Root, regular files reached without a
// symlink, no device, bounded in count and size, refused with a clear error
// past the bounds), the files a CLI keeps credentials in are left out, and
// every secret the bot holds, and every run token of the model gateway, is
// replaced in every file's bytes before they enter the archive.
//
// It never imports `bot` (but `bot/run`), `views`, `config`.
package takeover

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/internal/safefs"
	"github.com/alchemic-studio/alfred/state"
)

// Limits bound what one archive takes from a session folder.
type Limits struct {
	// Files is the most entries (files and folders) the folder may hold.
	Files int
	// Bytes is the most bytes its regular files may hold together.
	Bytes int64
}

// DefaultLimits are the bounds of the run page and of the command.
var DefaultLimits = Limits{Files: 10_000, Bytes: 256 << 20}

// ErrTooLarge is a session folder past its Limits.
var ErrTooLarge = errors.New("session folder too large to export")

// ErrNoSession is a mailbox with no session of that CLI to take over.
var ErrNoSession = errors.New("no session to take over")

// Session is one session to take over: the mailbox's, of one CLI.
type Session struct {
	Mailbox state.Mailbox
	// Descriptor is the CLI's; its Takeover says how a person resumes it.
	Descriptor agents.Descriptor
	// NativeID is the session's id, as the CLI reported it.
	NativeID string
}

// History is where the session's native id is read: the state store.
type History interface {
	PriorSession(mailboxID, adapterID, excludeRunID string) (state.LLMSession, bool, error)
}

// Find is the session of adapter d on mailbox mb: the latest llm session of
// the mailbox and adapter with a native id (the one the next run resumes).
func Find(h History, mb state.Mailbox, d agents.Descriptor) (Session, error) {
	if d.Takeover == nil {
		return Session{}, fmt.Errorf("%w: %s keeps no session a person can resume", ErrNoSession, d.ID)
	}
	if mb.Kind != state.KindIssue || mb.BranchName == "" {
		return Session{}, fmt.Errorf("%w: %s has no issue branch", ErrNoSession, mb.ID)
	}
	ls, found, err := h.PriorSession(mb.ID, d.ID, "")
	if !found {
		if err != nil {
			return Session{}, fmt.Errorf("session of %s on %s: %w", d.ID, mb.ID, err)
		}
		return Session{}, fmt.Errorf("%w: %s never kept a session of %s", ErrNoSession, d.ID, mb.ID)
	}
	return Session{Mailbox: mb, Descriptor: d, NativeID: *ls.NativeSessionID}, nil
}

// Exporter writes the archives of the sessions under one data folder.
type Exporter struct {
	// Sessions is where the session folders are (ALFRED_DATA_DIR).
	Sessions botrun.SessionStore
	// Secrets are every secret value the bot holds (the forges' tokens and
	// webhook secrets, the gateway's keys, ALFRED_AGENT_ENV's secret
	// values): none enters an archive.
	Secrets func() []string
	// Limits bound each archive; zero: DefaultLimits.
	Limits Limits
}

// Summary is what an archive took and left out.
type Summary struct {
	Files int
	Bytes int64
	// Left are the entries left out and why: credential files, symlinks,
	// devices.
	Left []string
}

// entry is one regular file to archive, found by the walk.
type entry struct {
	rel  string
	size int64
	mod  time.Time
}

// Write writes the tar.gz of s's session folder to w: its regular files,
// scrubbed, under the path the folder has in the CLI's home (".claude/projects/…"),
// so that `tar -xzf FILE -C ~` puts them where the CLI looks. Every bound
// is checked before the first byte is written: a folder past them is an
// error wrapping ErrTooLarge and nothing is written.
func (e Exporter) Write(ctx context.Context, w io.Writer, s Session) (Summary, error) {
	dir := e.Sessions.Dir(s.Mailbox, s.Descriptor.ID)
	tree, err := safefs.OpenTree(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Summary{}, fmt.Errorf("%w: the session folder of %s on %s is gone", ErrNoSession, s.Descriptor.ID, s.Mailbox.ID)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("open the session folder: %w", err)
	}
	defer tree.Close()
	files, sum, err := e.walk(tree)
	if err != nil {
		return Summary{}, err
	}
	prefix, err := homePath(s.Descriptor.SessionStatePath)
	if err != nil {
		return Summary{}, err
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error; transcripts compress well at any level
	tw := tar.NewWriter(zw)
	secrets := e.secrets()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		body, err := tree.ReadFile(f.rel, f.size)
		if err != nil {
			return sum, fmt.Errorf("read %s of the session folder: %w", f.rel, err)
		}
		body = Scrub(body, secrets)
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(prefix, string(Scrub([]byte(f.rel), secrets))), Mode: 0o600, Size: int64(len(body)), ModTime: f.mod, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return sum, fmt.Errorf("archive %s: %w", f.rel, err)
		}
		if _, err := tw.Write(body); err != nil {
			return sum, fmt.Errorf("archive %s: %w", f.rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return sum, fmt.Errorf("close the archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return sum, fmt.Errorf("close the archive: %w", err)
	}
	return sum, nil
}

func (e Exporter) secrets() []string {
	if e.Secrets == nil {
		return nil
	}
	return e.Secrets()
}

func (e Exporter) limits() Limits {
	if e.Limits == (Limits{}) {
		return DefaultLimits
	}
	return e.Limits
}

// walk lists the regular files of the folder to archive, within the
// limits, and what it leaves out. Nothing is followed: a symlink, a device,
// a FIFO or a socket is left out, as is a credential file.
func (e Exporter) walk(tree *safefs.Tree) ([]entry, Summary, error) {
	lim := e.limits()
	var files []entry
	var sum Summary
	seen := 0
	err := fs.WalkDir(tree.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk the session folder: %w", err)
		}
		if p == "." {
			return nil
		}
		if seen++; seen > lim.Files {
			return fmt.Errorf("%w: it holds more than %d files and folders", ErrTooLarge, lim.Files)
		}
		if d.IsDir() {
			return nil
		}
		fi, err := tree.Lstat(p)
		if err != nil {
			return fmt.Errorf("look at %s of the session folder: %w", p, err)
		}
		switch {
		case !fi.Mode().IsRegular():
			sum.Left = append(sum.Left, p+" ("+safefs.Kind(fi.Mode())+")")
			return nil
		case Credential(p):
			sum.Left = append(sum.Left, p+" (a credential file)")
			return nil
		case Configuration(p):
			sum.Left = append(sum.Left, p+" (configuration the CLI runs commands from)")
			return nil
		}
		if sum.Bytes += fi.Size(); sum.Bytes > lim.Bytes {
			return fmt.Errorf("%w: its files hold more than %s", ErrTooLarge, safefs.Size(lim.Bytes))
		}
		sum.Files++
		files = append(files, entry{rel: p, size: fi.Size(), mod: fi.ModTime()})
		return nil
	})
	return files, sum, err
}

// credentialNames are the files the CLIs keep credentials in (Claude
// Code's .credentials.json and .claude.json, Codex's and OpenCode's
// auth.json, Gemini's oauth_creds.json and google_accounts.json, the
// GitHub CLI's hosts.yml, Copilot's config.json): never exported, wherever
// they sit in the folder.
var credentialNames = []string{
	".credentials.json", ".claude.json", "auth.json", "oauth_creds.json", "google_accounts.json",
	"hosts.yml", "hosts.json", "config.json", ".netrc", ".git-credentials",
}

// Credential tells whether the file at p (slash-separated) is one a CLI
// keeps credentials in, by its name: one of credentialNames, or any name
// that says credential.
func Credential(p string) bool {
	base := strings.ToLower(path.Base(p))
	for _, n := range credentialNames {
		if base == n {
			return true
		}
	}
	return strings.Contains(base, "credential")
}

// configurationNames are the files a CLI reads commands to run from (Claude
// Code's settings with its hooks, Codex's config.toml with notify and MCP
// servers, Gemini's and OpenCode's settings with theirs, instruction files
// the CLI loads as its own): the agent wrote the session folder, so any of
// them would run what it chose on the machine of the person who unpacks
// the archive and resumes. Never exported, wherever they sit.
var configurationNames = []string{
	"settings.json", "settings.local.json", "config.toml", "opencode.json", "opencode.jsonc",
	"claude.md", "agents.md", "gemini.md", ".mcp.json", "mcp.json", "managed-settings.json",
}

// Configuration tells whether the file at p (slash-separated) is one a CLI
// reads commands from (configurationNames), or sits in a folder of hooks,
// commands, plugins or agents a CLI loads.
func Configuration(p string) bool {
	lower := strings.ToLower(p)
	for _, n := range configurationNames {
		if path.Base(lower) == n {
			return true
		}
	}
	for _, dir := range []string{"hooks", "commands", "plugins", "agents", "extensions"} {
		if strings.HasPrefix(lower, dir+"/") || strings.Contains(lower, "/"+dir+"/") {
			return true
		}
	}
	return false
}

// Scrub replaces every secret and every gateway run token in body with
// redact.Mark.
func Scrub(body []byte, secrets []string) []byte {
	text := redact.Secrets(string(body), secrets)
	if !strings.Contains(text, gateway.TokenPrefix) { // the pattern's scan costs more than the rest
		return []byte(text)
	}
	return []byte(gateway.TokenPattern.ReplaceAllLiteralString(text, redact.Mark))
}

// homePath is the session state path relative to the agent's home, where
// the archive's files go.
func homePath(sessionPath string) (string, error) {
	rel, ok := strings.CutPrefix(sessionPath, agents.AgentHome+"/")
	if !ok || rel == "" || !fs.ValidPath(rel) {
		return "", fmt.Errorf("session state path %q is not under %s", sessionPath, agents.AgentHome)
	}
	return rel, nil
}
