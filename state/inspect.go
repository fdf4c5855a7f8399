package state

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// Log writes the latest limit commits of the branch (all when limit <= 0),
// newest first, one per line: hash, UTC time and the first message line.
// It reads the repository on disk, so it also serves a read-only store; a
// writable one folds its journal first (see foldForGit).
func (s *Store) Log(ctx context.Context, w io.Writer, limit int) error {
	if err := s.foldForGit(ctx); err != nil {
		return err
	}
	stor := openStorage(s.dir)
	defer stor.Close()
	h, err := readTip(stor)
	if err != nil {
		return err
	}
	for n := 0; !h.IsZero() && (limit <= 0 || n < limit); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := object.GetCommit(stor, h)
		if err != nil {
			return fmt.Errorf("state log: read commit %s: %w", h, err)
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		if _, err := fmt.Fprintf(w, "%s %s %s\n", c.Hash, c.Committer.When.UTC().Format("2006-01-02T15:04:05Z"), subject); err != nil {
			return err
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return nil
}

// Show writes the record at path of the tip as indented JSON. An unreadable
// record that is not valid JSON is written as stored, followed by the error.
func (s *Store) Show(ctx context.Context, w io.Writer, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	snap := s.snap
	r := snap.rec(strings.Trim(path, "/"))
	s.mu.RUnlock()
	if r == nil {
		return fmt.Errorf("show %s: %w", path, ErrNotFound)
	}
	raw, err := snap.body(r)
	if err != nil {
		return fmt.Errorf("show %s: %w", path, err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		out.Reset()
		out.Write(raw)
	}
	out.WriteString("\n")
	if _, err := w.Write(bytes.TrimLeft(out.Bytes(), "\n")); err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	return nil
}
