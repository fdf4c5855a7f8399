package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/internal/gitcmd"
	"github.com/alchemic-studio/alfred/internal/safefs"
)

// MaxChangeFileBytes bounds one file of a change: a larger one is refused.
const MaxChangeFileBytes = 50 << 20

// Change is what the agent left in its working copy, as the bot computed it
// from the files alone: the tree it makes, the entries that differ from the
// commit checked out, and what was refused.
type Change struct {
	Tree  string
	Files []ChangedFile
	// Refused are the files the change may not carry, each with why; they
	// are not in Tree.
	Refused []Refusal
}

// Empty tells whether the change changes nothing.
func (c *Change) Empty() bool { return len(c.Files) == 0 }

// ChangedFile is one entry of a change.
type ChangedFile struct {
	Path             string
	Status           byte // A, M, D, T
	OldMode, NewMode string
	NewBlob          string
}

// Refusal is a file a change may not carry, and why, in words for the
// thread.
type Refusal struct {
	Path   string
	Reason string
}

// ErrRefused is a change with refused files.
type ErrRefused struct{ Change *Change }

func (e *ErrRefused) Error() string {
	var b strings.Builder
	b.WriteString("the change was refused:")
	for i, r := range e.Change.Refused {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s %s", r.Path, r.Reason)
	}
	return b.String()
}

// Stage computes the change the agent left, in the bot's private repository
// of the run: its index starts as the commit checked out, the candidates are
// the tracked files and the untracked ones the project does not ignore, each
// is looked at without following a link, and only regular files and links
// that stay inside the tree enter the index. Git reads the agent's folder
// as a work tree only: no configuration, hook or object of the agent's is
// used.
func (w *Worktree) Stage(ctx context.Context) (*Change, error) {
	if err := w.initPrivate(ctx); err != nil {
		return nil, err
	}
	c := w.privateCmd()
	if _, err := git(ctx, c, "read-tree", w.start); err != nil {
		return nil, fmt.Errorf("stage the change: %w", err)
	}
	out, err := git(ctx, c, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, fmt.Errorf("list the agent's files: %w", err)
	}
	tree, err := safefs.OpenTree(w.Dir)
	if err != nil {
		return nil, fmt.Errorf("open the agent's working copy: %w", err)
	}
	defer tree.Close()
	ch := &Change{}
	var keep, gone bytes.Buffer
	l := lstater{tree}
	for _, p := range uniq(strings.Split(strings.TrimRight(out, "\x00"), "\x00")) {
		switch why, present := l.check(p); {
		case why != "":
			ch.Refused = append(ch.Refused, Refusal{Path: strings.TrimSuffix(p, "/"), Reason: why})
			gone.WriteString(strings.TrimSuffix(p, "/") + "\x00")
		case present:
			keep.WriteString(p + "\x00")
		default:
			gone.WriteString(p + "\x00")
		}
	}
	special, err := w.specialFiles(ctx, tree)
	if err != nil {
		return nil, err
	}
	ch.Refused = append(ch.Refused, special...)
	if err := w.update(ctx, &gone, "--force-remove"); err != nil {
		return nil, err
	}
	if err := w.update(ctx, &keep, "--add", "--remove"); err != nil {
		return nil, err
	}
	if ch.Tree, err = git(ctx, c, "write-tree"); err != nil {
		return nil, fmt.Errorf("write the change's tree: %w", err)
	}
	ch.Tree = strings.TrimSpace(ch.Tree)
	ch.Files, err = w.diff(ctx, ch.Tree)
	return ch, err
}

// maxWalk bounds the entries of the agent's folder looked at for special
// files: past it the look stops (they are never staged either way; the
// look is only there to tell a person).
const maxWalk = 500_000

// specialFiles finds the FIFOs, sockets and devices the agent left where the
// project does not ignore them: git would leave them out without a word, and
// a person should hear that part of what the agent made is not carried.
func (w *Worktree) specialFiles(ctx context.Context, root *safefs.Tree) ([]Refusal, error) {
	var found []string
	n := 0
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: nothing of it is staged either
		}
		if n++; n > maxWalk || ctx.Err() != nil {
			return fs.SkipAll
		}
		switch t := d.Type(); {
		case p == ".git" && d.IsDir():
			return fs.SkipDir
		case t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0:
			found = append(found, p)
		}
		return nil
	})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	c := w.privateCmd()
	c.Stdin = strings.NewReader(strings.Join(found, "\x00") + "\x00")
	out, err := git(ctx, c, "check-ignore", "-z", "--stdin", "--no-index")
	var gerr *gitcmd.Error
	if err != nil && !(errors.As(err, &gerr) && gerr.ExitCode() == 1) { // 1: none is ignored
		return nil, fmt.Errorf("look for ignored files: %w", err)
	}
	ignored := strings.Split(out, "\x00")
	var refused []Refusal
	for _, p := range found {
		if slices.Contains(ignored, p) {
			continue
		}
		fi, err := root.Lstat(p)
		if err != nil {
			continue
		}
		refused = append(refused, Refusal{Path: p, Reason: "is " + safefs.Kind(fi.Mode()) + ", not a regular file"})
	}
	return refused, nil
}

// initPrivate makes the bot's private repository of the run: bare, its
// objects borrowed from the cache (read-only, through alternates), its
// excludes the agent CLI's files.
func (w *Worktree) initPrivate(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(w.private, "HEAD")); err == nil {
		return nil
	}
	if _, err := git(ctx, gitcmd.Cmd{GitDir: w.private}, "init", "--bare", "--quiet"); err != nil {
		return fmt.Errorf("make the run's own repository: %w", err)
	}
	objects, err := filepath.Abs(filepath.Join(w.cache, "objects"))
	if err != nil {
		return err
	}
	files := map[string]string{
		filepath.Join("objects", "info", "alternates"): objects + "\n",
		filepath.Join("info", "exclude"):               strings.Join(w.Excludes, "\n") + "\n",
	}
	for name, body := range files {
		p := filepath.Join(w.private, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("make the run's own repository: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			return fmt.Errorf("make the run's own repository: %w", err)
		}
	}
	return nil
}

// privateCmd is a command on the run's private repository whose work tree
// is the agent's folder, as data.
func (w *Worktree) privateCmd() gitcmd.Cmd {
	return gitcmd.Cmd{GitDir: w.private, WorkTree: w.Dir, Dir: w.Dir, Index: filepath.Join(w.private, "index"),
		Config: []string{"core.symlinks=true", "core.fileMode=true", "core.bare=false"}}
}

// update feeds NUL-separated paths to git update-index with flags.
func (w *Worktree) update(ctx context.Context, paths *bytes.Buffer, flags ...string) error {
	if paths.Len() == 0 {
		return nil
	}
	c := w.privateCmd()
	c.Stdin = paths
	if _, err := git(ctx, c, append(append([]string{"update-index"}, flags...), "-z", "--stdin")...); err != nil {
		return fmt.Errorf("stage the agent's files: %w", err)
	}
	return nil
}

// diff lists the entries of tree that differ from the commit checked out.
func (w *Worktree) diff(ctx context.Context, tree string) ([]ChangedFile, error) {
	out, err := git(ctx, w.privateCmd(), "diff-tree", "-r", "-z", "--raw", "--no-renames", w.start, tree)
	if err != nil {
		return nil, fmt.Errorf("compare the change: %w", err)
	}
	var files []ChangedFile
	fields := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) < 5 {
			return nil, fmt.Errorf("compare the change: unexpected line %q", fields[i])
		}
		files = append(files, ChangedFile{Path: fields[i+1], OldMode: meta[0], NewMode: meta[1], NewBlob: meta[3], Status: meta[4][0]})
	}
	return files, nil
}

// lstater looks at the agent's files without following links
// (safefs.Tree).
type lstater struct{ tree *safefs.Tree }

// check says whether the candidate p may enter the change (why is empty)
// and whether it is there at all. A path under a folder that became a link
// or a file is not there.
func (l lstater) check(p string) (why string, present bool) {
	if strings.HasSuffix(p, "/") {
		return "is a nested git repository (submodules and gitlinks are not accepted)", false
	}
	fi, err := l.tree.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, safefs.ErrSymlink), errors.Is(err, safefs.ErrNotRegular):
		return "", false // gone, or under a folder that is a link or a file now
	case err != nil:
		return "could not be read (" + err.Error() + ")", false
	}
	switch m := fi.Mode(); {
	case m.IsRegular() && fi.Size() > MaxChangeFileBytes:
		return fmt.Sprintf("is %d MiB, over the %d MiB a file of a change may have", fi.Size()>>20, MaxChangeFileBytes>>20), false
	case m.IsRegular():
		return "", true
	case m&fs.ModeSymlink != 0:
		return l.link(p), true
	case m.IsDir():
		return "", false // a file that became a folder: its files are candidates of their own
	default:
		return "is " + safefs.Kind(m) + ", not a regular file", false
	}
}

// link refuses a symbolic link that points out of the tree or into .git.
func (l lstater) link(p string) string {
	target, err := l.tree.Readlink(p)
	if err != nil {
		return "is a link that could not be read"
	}
	if filepath.IsAbs(target) {
		return "is a link to " + target + ", outside the repository"
	}
	to := path.Clean(path.Join(path.Dir(p), filepath.ToSlash(target)))
	if to == ".." || strings.HasPrefix(to, "../") {
		return "is a link to " + target + ", outside the repository"
	}
	if to == ".git" || strings.HasPrefix(to, ".git/") {
		return "is a link into .git"
	}
	return ""
}

func uniq(paths []string) []string {
	seen := make(map[string]bool, len(paths))
	out := paths[:0]
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Patch is the whole change as a binary-safe diff, for a person to inspect
// a change that was held; at most max bytes (cut with a last line saying so).
func (w *Worktree) Patch(ctx context.Context, ch *Change, max int) (string, error) {
	var b limitedBuffer
	b.max = max
	err := gitcmd.RunTo(ctx, w.privateCmd(), &b, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", w.start, ch.Tree)
	if err != nil && !b.full {
		return "", fmt.Errorf("make the change's patch: %w", err)
	}
	if b.full {
		b.buf.WriteString("\n... (cut: the patch is longer)\n")
	}
	return b.buf.String(), nil
}

type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	full bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); len(p) > room {
		l.buf.Write(p[:max(room, 0)])
		l.full = true
		return 0, errors.New("patch limit reached")
	}
	return l.buf.Write(p)
}

// blobs reads the blobs shas of the private repository with one git
// process, and hands each one's first max bytes to each, in order; the
// rest of a blob is read past, never kept.
func (w *Worktree) blobs(ctx context.Context, shas []string, max int, each func(sha string, body []byte)) error {
	if len(shas) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	c := w.privateCmd()
	c.Stdin = strings.NewReader(strings.Join(shas, "\n") + "\n")
	done := make(chan error, 1)
	go func() {
		err := gitcmd.RunTo(ctx, c, pw, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	err := readBatch(bufio.NewReader(pr), len(shas), max, each)
	pr.CloseWithError(errors.New("read enough")) // git ends at once if we stopped early
	if gitErr := <-done; err == nil && gitErr != nil {
		err = gitErr
	}
	if err != nil {
		return fmt.Errorf("read the change's files: %w", err)
	}
	return nil
}

// readBatch reads n answers of git cat-file --batch: a header "<sha> <type>
// <size>", the content and a newline each.
func readBatch(r *bufio.Reader, n, max int, each func(sha string, body []byte)) error {
	for range n {
		header, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return fmt.Errorf("unexpected answer %q", strings.TrimSpace(header))
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("unexpected answer %q", strings.TrimSpace(header))
		}
		body := make([]byte, min(size, int64(max)))
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		if _, err := io.CopyN(io.Discard, r, size-int64(len(body))+1); err != nil { // the rest, and the newline
			return err
		}
		each(f[0], body)
	}
	return nil
}
