package safefs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// MaxGlobEntries bounds the folder entries one Glob visits.
const MaxGlobEntries = 10_000

// globBatch is how many entries Glob reads from a folder at a time, so
// that a huge folder is refused after MaxGlobEntries, not listed whole.
const globBatch = 256

// Glob is the paths under dir (slash-separated, relative to dir, sorted)
// that match pattern, a slash-separated relative pattern matched one
// component at a time with path.Match ("*/chats/session-*.jsonl").
//
// Only real folders are walked: a symlink to a folder is skipped, never
// followed, and so is anything under it. The final component matches
// every entry but a folder: regular files, and also symlinks, FIFOs and
// devices, so that the caller's ReadFile refuses them with a note
// rather than the file silently missing. Glob visits at most
// MaxGlobEntries entries and fails past them (an *Error wrapping
// ErrTooMany); a pattern that is absolute, leaves dir or is malformed is
// an error. A folder on the way that cannot be read counts as holding no
// match.
func Glob(dir, pattern string) ([]string, error) {
	parts, err := patternParts(pattern)
	if err != nil {
		return nil, err
	}
	root, err := openRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	g := &globber{root: root, pattern: pattern}
	matches, err := g.walk(".", parts)
	if err != nil {
		return nil, err
	}
	slices.Sort(matches)
	return matches, nil
}

// patternParts splits a relative pattern into its components.
func patternParts(pattern string) ([]string, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("safefs: pattern %q: %w", pattern, err)
	}
	parts := strings.Split(pattern, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || path.IsAbs(pattern) {
			return nil, &Error{Path: fmt.Sprintf("%q", pattern), Reason: "is not a pattern inside the folder", Err: ErrOutside}
		}
	}
	return parts, nil
}

// globber walks one Glob, counting the entries it visits.
type globber struct {
	root    *os.Root
	pattern string
	visited int
}

// walk is the matches of parts in the folder dir.
func (g *globber) walk(dir string, parts []string) ([]string, error) {
	entries, err := g.readDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if ok, _ := path.Match(parts[0], e.Name()); !ok {
			continue
		}
		rel := path.Join(dir, e.Name())
		switch {
		case len(parts) == 1 && !e.IsDir():
			out = append(out, rel)
		case len(parts) > 1 && e.Type() == fs.ModeDir: // a real folder: a symlink's type is ModeSymlink
			sub, err := g.walk(rel, parts[1:])
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

// readDir lists the folder dir, counting its entries against
// MaxGlobEntries; a folder that cannot be read lists nothing.
func (g *globber) readDir(dir string) ([]fs.DirEntry, error) {
	f, err := g.root.Open(dir)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	var all []fs.DirEntry
	for {
		batch, err := f.ReadDir(globBatch)
		g.visited += len(batch)
		if g.visited > MaxGlobEntries {
			return nil, &Error{Path: g.pattern, Reason: fmt.Sprintf("goes through over %d folder entries, the limit", MaxGlobEntries), Err: ErrTooMany}
		}
		all = append(all, batch...)
		if err != nil || len(batch) == 0 { // io.EOF at the end; another error ends the listing too
			return all, nil
		}
	}
}
