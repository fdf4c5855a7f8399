package kube

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
)

// maxStderrBytes bounds the stderr kept from the copy-out.
const maxStderrBytes = 64 << 20

// tarHeaderBytes is what an entry costs the copy-out's total besides its
// data: one tar header block.
const tarHeaderBytes = 512

// copyOut is what the copy-out brought back.
type copyOut struct {
	stderr    []byte
	hasStderr bool
	// skipped are the entries not copied, of a kind the host folder does
	// not take ("session/d/x is a FIFO"), each also logged.
	skipped []string
}

// copyBack copies the agent's stderr file, the worktree (when read-write)
// and the session folder out of the Pod (tar in the helper) and makes the
// host folders equal to them. The stream is the agent's, so untrusted: it
// is bounded by copyLimits, and a stream over them is cut at once (the
// exec ends) with an error. Host entries the Pod no longer has are removed
// only when the whole stream arrived and every entry applied.
func (r *Runner) copyBack(ctx context.Context, p *plan, log *slog.Logger) (copyOut, error) {
	return r.copyBackAfter(ctx, p, nil, log)
}

// copyBackAfter is copyBack; when primed is not nil, the exec follows the
// agent's stderr until a line can be read from primed.start, and only then
// copies out (prime.go).
func (r *Runner) copyBackAfter(ctx context.Context, p *plan, primed *primeStream, log *slog.Logger) (copyOut, error) {
	args := []string{"/bin/sh", "-c", "exec tar -cf - -C " + stageDir + ` "$@"`, "tar"}
	var start io.Reader
	var stderr func(msg io.Writer) io.Writer
	if primed != nil {
		args = []string{"/bin/sh", "-c", primedScript, "tar", p.endMark, strconv.FormatInt(primed.from, 10)}
		start = primed.start
		stderr = func(msg io.Writer) io.Writer { primed.split.msg = msg; return primed.split }
	}
	args = append(args, volRun+"/"+subDir+"/stderr")
	var mirrors []*mirror
	if wt := p.worktree; wt != nil && !wt.ReadOnly {
		args = append(args, volWorkspace+"/"+subDir)
		mirrors = append(mirrors, &mirror{prefix: volWorkspace + "/" + subDir, host: wt.Host})
	}
	if s := p.session; s != nil {
		args = append(args, volSession+"/"+subDir)
		mirrors = append(mirrors, &mirror{prefix: volSession + "/" + subDir, host: s.Host})
	}
	for _, m := range mirrors {
		if err := m.open(p.spec.UID, p.spec.GID); err != nil {
			return copyOut{}, err
		}
		defer m.root.Close()
	}
	execCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	read := make(chan readResult, 1)
	go func() {
		out, err := readCopy(pr, mirrors, r.copyLimits(), log)
		if err != nil {
			cancel() // nothing more is read: end the stream through the API server now
		}
		pr.CloseWithError(err)
		read <- readResult{out, err}
	}()
	err := r.execIO(execCtx, p.name, ctrHelper, args, start, pw, stderr)
	pw.CloseWithError(err)
	res := <-read
	if res.err != nil {
		return res.out, res.err // it holds the exec's error, when that broke the stream
	}
	if err == nil {
		err = finish(mirrors)
	}
	return res.out, err
}

type readResult struct {
	out copyOut
	err error
}

// copyLimits bound one copy-out: total the bytes of the whole stream (its
// files' data and tarHeaderBytes an entry), file the data of one entry.
type copyLimits struct{ total, file int64 }

func (r *Runner) copyLimits() copyLimits {
	return copyLimits{total: r.opts.CopyOutMaxBytes, file: r.opts.CopyOutMaxFileBytes}
}

// budget counts a copy-out's stream against its limits.
type budget struct {
	copyLimits
	used int64
}

// take counts entry h, or refuses it when it goes over a limit.
func (b *budget) take(h *tar.Header, name string) error {
	size := int64(0)
	if carriesData(h.Typeflag) {
		size = h.Size
	}
	if size > b.file {
		return fmt.Errorf("kube: copy-out of the Pod's files stopped: %s is %s, over the %s limit of one file (CopyOutMaxFileBytes); nothing removed from the host folders", entryName(name), sizeText(size), sizeText(b.file))
	}
	b.used += tarHeaderBytes + size
	if b.used > b.total {
		return fmt.Errorf("kube: copy-out of the Pod's files stopped at %s: the stream goes over the %s limit of a copy-out (CopyOutMaxBytes); nothing removed from the host folders", entryName(name), sizeText(b.total))
	}
	return nil
}

// carriesData tells whether a tar entry of type flag has data after its
// header: every type but the header-only ones.
func carriesData(flag byte) bool {
	switch flag {
	case tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return false
	}
	return true
}

// entryName is a copy-out entry as a person knows it: "session file
// x/y.jsonl", "worktree file a.bin", "the agent's stderr".
func entryName(name string) string {
	switch name {
	case volRun + "/" + subDir + "/stderr":
		return "the agent's stderr"
	case volSession + "/" + subDir + "/":
		return "the session folder"
	case volWorkspace + "/" + subDir + "/":
		return "the worktree"
	}
	if rest, ok := strings.CutPrefix(name, volSession+"/"+subDir+"/"); ok {
		return "session file " + rest
	}
	if rest, ok := strings.CutPrefix(name, volWorkspace+"/"+subDir+"/"); ok {
		return "worktree file " + rest
	}
	return "entry " + name
}

// sizeText is n bytes for a person: "512 bytes", "2 GiB", "1.5 MiB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<30)), ".0") + " GiB"
	case n >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

// readCopy applies the copy-out tar to the mirrors and keeps stderr,
// within lim. An entry a mirror refuses makes it incomplete; one over a
// limit ends the copy-out at once with an error.
func readCopy(r io.Reader, mirrors []*mirror, lim copyLimits, log *slog.Logger) (copyOut, error) {
	var out copyOut
	b := &budget{copyLimits: lim}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("kube: read the copy-out: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if err := b.take(h, name); err != nil {
			return out, err
		}
		if name == volRun+"/"+subDir+"/stderr" {
			out.stderr, err = io.ReadAll(io.LimitReader(tr, maxStderrBytes))
			out.hasStderr = err == nil
			continue
		}
		m := mirrorOf(mirrors, name)
		if m == nil {
			continue
		}
		switch what, err := m.apply(h, name, tr); {
		case err != nil:
			log.Warn("copy-out entry refused", "entry", name, "err", err)
			m.refuse(name, err)
		case what != "":
			log.Warn("copy-out entry skipped: not copied to the host", "entry", name, "kind", what)
			out.skipped = append(out.skipped, entryName(name)+" is "+what)
		}
	}
}

func mirrorOf(mirrors []*mirror, name string) *mirror {
	for _, m := range mirrors {
		if strings.TrimSuffix(name, "/") == m.prefix || strings.HasPrefix(name, m.prefix+"/") {
			return m
		}
	}
	return nil
}

// finish removes what each complete mirror did not see and sets the modes
// of its folders.
func finish(mirrors []*mirror) error {
	var errs []error
	for _, m := range mirrors {
		errs = append(errs, m.finish())
	}
	return errors.Join(errs...)
}

// mirror makes the host folder host equal to the tar entries under prefix,
// never writing outside it: every path goes through an os.Root, symlinks
// are made as symlinks and never followed out, absolute and ".." names are
// refused, hard links only to entries of the same folder, FIFOs and
// devices skipped, and set-id bits are dropped.
type mirror struct {
	prefix, host string
	root         *os.Root
	uid, gid     int
	chown        bool            // the bot is root: entries go to the agent's user, as in a bind mount
	seen         map[string]bool // relative paths the Pod has
	dirModes     map[string]fs.FileMode
	incomplete   bool
	refused      error // the first entry refused, and how many more
	more         int
}

// refuse notes that entry name was not applied: the mirror is incomplete.
func (m *mirror) refuse(name string, err error) {
	m.incomplete = true
	if m.refused == nil {
		m.refused = fmt.Errorf("%s: %w", entryName(name), err)
		return
	}
	m.more++
}

func (m *mirror) open(uid, gid int) error {
	root, err := os.OpenRoot(m.host)
	if err != nil {
		return fmt.Errorf("kube: copy-out to %s: %w", m.host, err)
	}
	m.root, m.uid, m.gid, m.chown = root, uid, gid, os.Geteuid() == 0
	m.seen, m.dirModes = map[string]bool{".": true}, map[string]fs.FileMode{}
	return nil
}

// relOf is the path of entry name under the mirror, or an error.
func (m *mirror) relOf(name string) (string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(name, m.prefix), "/")
	if rest == "" {
		return ".", nil
	}
	rel := path.Clean(rest)
	if path.IsAbs(rest) || !fs.ValidPath(rel) {
		return "", fmt.Errorf("refused path %q", name)
	}
	return rel, nil
}

// apply makes the host entry of tar entry h. An entry of a kind the host
// folder does not take (a FIFO, a device) is not made: what names its
// kind ("a FIFO"), and the host entry of that name is removed at finish.
func (m *mirror) apply(h *tar.Header, name string, r io.Reader) (what string, err error) {
	rel, err := m.relOf(name)
	if err != nil || rel == "." {
		return "", err
	}
	for d := rel; d != "."; d = path.Dir(d) {
		m.seen[d] = true
	}
	mode := fs.FileMode(h.Mode) & fs.ModePerm
	switch h.Typeflag {
	case tar.TypeDir:
		return "", m.dir(rel, mode)
	case tar.TypeReg:
		return "", m.file(rel, mode, h, r)
	case tar.TypeSymlink:
		return "", m.symlink(rel, h.Linkname)
	case tar.TypeLink:
		return "", m.link(rel, h.Linkname)
	}
	delete(m.seen, rel)
	return special(h.Typeflag), nil
}

// special names a tar entry type the copy-out does not make.
func special(flag byte) string {
	switch flag {
	case tar.TypeFifo:
		return "a FIFO"
	case tar.TypeChar:
		return "a character device"
	case tar.TypeBlock:
		return "a block device"
	}
	return fmt.Sprintf("of tar type %q", flag)
}

// clear removes what is at rel unless it is of the kind keep says.
func (m *mirror) clear(rel string, keep func(fs.FileMode) bool) (exists bool, err error) {
	fi, err := m.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if keep(fi.Mode()) {
		return true, nil
	}
	return false, m.root.RemoveAll(rel)
}

func (m *mirror) dir(rel string, mode fs.FileMode) error {
	exists, err := m.clear(rel, fs.FileMode.IsDir)
	if err != nil {
		return err
	}
	if !exists {
		if err := m.root.Mkdir(rel, 0o700); err != nil {
			return err
		}
	}
	m.dirModes[rel] = mode
	return m.own(rel)
}

func (m *mirror) file(rel string, mode fs.FileMode, h *tar.Header, r io.Reader) error {
	if _, err := m.clear(rel, fs.FileMode.IsRegular); err != nil {
		return err
	}
	f, err := m.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := m.root.Chmod(rel, mode); err != nil {
		return err
	}
	if err := m.root.Chtimes(rel, h.ModTime, h.ModTime); err != nil {
		return err
	}
	return m.own(rel)
}

// symlink makes rel a symlink to target, which is kept as the agent made
// it (it may point anywhere: nothing here follows it).
func (m *mirror) symlink(rel, target string) error {
	if fi, err := m.root.Lstat(rel); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			if old, err := m.root.Readlink(rel); err == nil && old == target {
				return nil
			}
		}
		if err := m.root.RemoveAll(rel); err != nil {
			return err
		}
	}
	if err := m.root.Symlink(target, rel); err != nil {
		return err
	}
	return m.own(rel)
}

// link makes rel a hard link to an entry of the same mirror.
func (m *mirror) link(rel, target string) error {
	to, err := m.relOf(strings.TrimPrefix(target, "./"))
	if err != nil || to == "." || !strings.HasPrefix(strings.TrimPrefix(target, "./"), m.prefix+"/") {
		return fmt.Errorf("refused hard link %q to %q: a hard link may only point to an entry of the same folder", rel, target)
	}
	if _, err := m.clear(rel, func(fs.FileMode) bool { return false }); err != nil {
		return err
	}
	return m.root.Link(to, rel)
}

func (m *mirror) own(rel string) error {
	if !m.chown {
		return nil
	}
	return m.root.Lchown(rel, m.uid, m.gid)
}

// finish removes the host entries the Pod did not have (when the stream was
// complete) and sets the folders' modes, deepest first.
func (m *mirror) finish() error {
	if m.incomplete {
		more := ""
		if m.more > 0 {
			more = fmt.Sprintf(" (and %d more entries)", m.more)
		}
		return fmt.Errorf("kube: copy-out to %s incomplete, nothing removed%s: %w", m.host, more, m.refused)
	}
	var stale []string
	err := fs.WalkDir(m.root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !m.seen[rel] {
			stale = append(stale, rel)
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	for _, rel := range stale {
		err = errors.Join(err, m.root.RemoveAll(rel))
	}
	dirs := sortedDirs(boolKeys(m.dirModes))
	for i := len(dirs) - 1; i >= 0; i-- {
		err = errors.Join(err, m.root.Chmod(dirs[i], m.dirModes[dirs[i]]))
	}
	if err != nil {
		return fmt.Errorf("kube: copy-out to %s: %w", m.host, err)
	}
	return nil
}

func boolKeys(modes map[string]fs.FileMode) map[string]bool {
	keys := make(map[string]bool, len(modes))
	for k := range modes {
		keys[k] = true
	}
	return keys
}
