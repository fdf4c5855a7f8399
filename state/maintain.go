package state

// What a maintainer does with the branch, beside the engine: the audit
// history of one mailbox (MailboxLog), a check of the repository and of its
// records (Verify), every record as JSON lines (Export), and a repack with
// a bounded history (Compact).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/alchemic-studio/alfred/internal/gitcmd"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// MailboxLog writes the audit history of the mailbox id from the branch,
// newest first: each commit that changed the mailbox's folder (its
// record, runs and llm sessions), then one line per file it changed, with
// the fields that changed. limit bounds the commits shown (all when <= 0).
func (s *Store) MailboxLog(ctx context.Context, w io.Writer, id string, limit int) error {
	k, err := ParseMailboxID(id)
	if err != nil {
		return err
	}
	dir := k.dir()
	if err := s.foldForGit(ctx); err != nil {
		return err
	}
	stor := openStorage(s.dir)
	defer stor.Close()
	h, err := readTip(stor)
	if err != nil {
		return err
	}
	shown := 0
	for !h.IsZero() && (limit <= 0 || shown < limit) {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := object.GetCommit(stor, h)
		if err != nil {
			return fmt.Errorf("mailbox log: read commit %s: %w", h, err)
		}
		changed, err := mailboxChanges(c, dir)
		if err != nil {
			return fmt.Errorf("mailbox log: commit %s: %w", h, err)
		}
		if len(changed) > 0 {
			shown++
			if err := writeLogEntry(w, c, changed); err != nil {
				return err
			}
		}
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	if shown == 0 {
		return fmt.Errorf("mailbox log %s: no commit touched %s: %w", id, dir, ErrNotFound)
	}
	return nil
}

// subtree is the tree at dir of commit c (nil when c has no such folder).
func subtree(c *object.Commit, dir string) (*object.Tree, error) {
	root, err := c.Tree()
	if err != nil {
		return nil, err
	}
	t, err := root.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	return t, err
}

// mailboxChanges lists what c changed under dir, compared with its first parent.
func mailboxChanges(c *object.Commit, dir string) (object.Changes, error) {
	cur, err := subtree(c, dir)
	if err != nil {
		return nil, err
	}
	var prev *object.Tree
	if len(c.ParentHashes) > 0 {
		p, err := c.Parent(0)
		if err != nil {
			return nil, err
		}
		if prev, err = subtree(p, dir); err != nil {
			return nil, err
		}
	}
	if cur == nil && prev == nil || cur != nil && prev != nil && cur.Hash == prev.Hash {
		return nil, nil
	}
	return object.DiffTree(prev, cur)
}

// writeLogEntry writes a commit and what it changed in the mailbox.
func writeLogEntry(w io.Writer, c *object.Commit, changes object.Changes) error {
	var b strings.Builder
	subject, _, _ := strings.Cut(c.Message, "\n")
	fmt.Fprintf(&b, "%s %s %s\n", c.Committer.When.UTC().Format(time.RFC3339), c.Hash.String()[:12], subject)
	sort.Slice(changes, func(i, j int) bool { return changeName(changes[i]) < changeName(changes[j]) })
	for _, ch := range changes {
		from, to, err := ch.Files()
		if err != nil {
			return fmt.Errorf("mailbox log: %w", err)
		}
		switch {
		case from == nil:
			fmt.Fprintf(&b, "  + %s\n", ch.To.Name)
		case to == nil:
			fmt.Fprintf(&b, "  - %s\n", ch.From.Name)
		default:
			fmt.Fprintf(&b, "  ~ %s: %s\n", ch.To.Name, fieldChanges(from, to))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func changeName(ch *object.Change) string {
	if ch.To.Name != "" {
		return ch.To.Name
	}
	return ch.From.Name
}

// fieldChanges says which top-level fields of a JSON record changed, and how.
func fieldChanges(from, to *object.File) string {
	var a, b map[string]json.RawMessage
	ra, _ := from.Contents()
	rb, _ := to.Contents()
	if json.Unmarshal([]byte(ra), &a) != nil || json.Unmarshal([]byte(rb), &b) != nil {
		return "not a JSON object"
	}
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if k == "updated_at" || bytes.Equal(a[k], b[k]) {
			continue
		}
		if k == "log" {
			out = append(out, fmt.Sprintf("log (%d bytes)", len(b[k])))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s -> %s", k, clip(a[k]), clip(b[k])))
	}
	if len(out) == 0 {
		return "updated_at"
	}
	return strings.Join(out, "; ")
}

// clip shows a JSON value on one short line ("-" when absent).
func clip(v json.RawMessage) string {
	if v == nil {
		return "-"
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return "?"
	}
	s := b.String()
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// Export writes every record of the tip as one JSON line, in path order:
// {"path": ..., "record": {...}}; an unreadable record that is not JSON
// comes as {"path": ..., "raw": "...", "error": "..."}. It returns how many
// records it wrote.
func (s *Store) Export(ctx context.Context, w io.Writer) (int, error) {
	paths := s.List("")
	n := 0
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		line, err := exportLine(s, p)
		if err != nil {
			return n, err
		}
		if _, err := w.Write(line); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func exportLine(s *Store, path string) ([]byte, error) {
	s.mu.RLock()
	snap := s.snap
	r := snap.rec(path)
	s.mu.RUnlock()
	if r == nil {
		return nil, fmt.Errorf("export %s: %w", path, ErrNotFound)
	}
	raw, err := snap.body(r)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", path, err)
	}
	var compact bytes.Buffer
	var v any
	if json.Compact(&compact, raw) == nil {
		v = struct {
			Path   string          `json:"path"`
			Record json.RawMessage `json:"record"`
			Error  string          `json:"error,omitempty"`
		}{path, compact.Bytes(), unreadable(r)}
	} else {
		v = struct {
			Path  string `json:"path"`
			Raw   string `json:"raw"`
			Error string `json:"error"`
		}{path, string(raw), unreadable(r)}
	}
	line, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", path, err)
	}
	return append(line, '\n'), nil
}

func unreadable(r *record) string {
	if r.err == nil {
		return ""
	}
	return r.err.Err.Error()
}

// Verify checks the repository with git fsck, then the records of the
// tip: every record parses, typed records sit at the path their content
// names, what a record refers to exists (a run's and an llm session's
// mailbox, a session's run, a mailbox's active run), and every entry of
// the in-memory indexes points at a record. It writes one line per problem
// and a summary, and returns how many problems it found. Beside a running
// server, a pack merged away during the check can show as a problem: run
// it again.
func (s *Store) Verify(ctx context.Context, w io.Writer) (int, error) {
	var problems []string
	if out, err := gitFsck(ctx, s.dir); err != nil {
		problems = append(problems, "git fsck: "+out)
	}
	problems = append(problems, s.checkRecords()...)
	problems = append(problems, s.checkIndexes()...)
	for _, p := range problems {
		if _, err := fmt.Fprintf(w, "problem: %s\n", p); err != nil {
			return len(problems), err
		}
	}
	_, err := fmt.Fprintf(w, "%d records at commit %s, %d problems\n", s.Len(), s.Tip(), len(problems))
	return len(problems), err
}

// gitFsck runs git fsck on the repository; its output says what is wrong.
func gitFsck(ctx context.Context, dir string) (string, error) {
	out, err := gitcmd.Run(ctx, gitcmd.Cmd{GitDir: dir}, "fsck", "--full", "--strict", "--no-dangling", "--no-progress")
	if err != nil {
		var gerr *gitcmd.Error
		if errors.As(err, &gerr) {
			out = strings.TrimSpace(out + "\n" + gerr.Stderr)
		}
		return strings.TrimSpace(out) + " (" + err.Error() + ")", err
	}
	return "", nil
}

// mailboxSeen remembers whether the mailbox of the folder checked last
// has a record: the records of a mailbox come together.
type mailboxSeen struct {
	dir string
	ok  bool
}

func (m *mailboxSeen) has(snap *snapshot, dir string) bool {
	if dir != m.dir {
		m.dir, m.ok = dir, snap.rec(dir+"/mailbox.json") != nil
	}
	return m.ok
}

// checkRecords checks each record of the tip.
func (s *Store) checkRecords() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	var seen mailboxSeen
	for p, r := range s.snap.records() {
		if r.err != nil {
			out = append(out, fmt.Sprintf("%s does not parse: %v", p, r.err.Err))
			continue
		}
		raw, err := s.snap.body(r)
		if err != nil {
			out = append(out, fmt.Sprintf("%s cannot be read: %v", p, err))
			continue
		}
		if msg := s.checkRecord(p, raw, &seen); msg != "" {
			out = append(out, p+": "+msg)
		}
	}
	return out
}

// checkRecord checks where a typed record sits and what it refers to; the
// caller holds s.mu.
func (s *Store) checkRecord(path string, raw []byte, seen *mailboxSeen) string {
	var head struct {
		ID          string `json:"id"`
		MailboxID   string `json:"mailbox_id"`
		RunID       string `json:"run_id"`
		ActiveRunID string `json:"active_run_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "does not parse: " + err.Error()
	}
	switch kindOf(path) {
	case "mailbox":
		return s.checkMailbox(path, head.ID, head.ActiveRunID)
	case "run":
		return s.checkOwned(path, head.ID, head.MailboxID, "run", seen)
	case "llm_session":
		if msg := s.checkOwned(path, head.ID, head.MailboxID, "llm session", seen); msg != "" {
			return msg
		}
		if rp, ok := s.snap.runPath(head.RunID); !ok || !strings.HasPrefix(rp, parentOf(parentOf(path))+"/runs/") {
			return fmt.Sprintf("its run %q is not a record of its mailbox", head.RunID)
		}
	case "installation":
		var a AgentInstallation
		if json.Unmarshal(raw, &a) == nil {
			if want, err := a.path(); err != nil || want != path {
				return fmt.Sprintf("its content belongs at %q (%v)", want, err)
			}
		}
	case "setting":
		var o SettingOverride
		if json.Unmarshal(raw, &o) == nil {
			if want, err := o.path(); err != nil || want != path {
				return fmt.Sprintf("its content belongs at %q (%v)", want, err)
			}
		}
	}
	return ""
}

func (s *Store) checkMailbox(path, id, activeRun string) string {
	k, err := ParseMailboxID(id)
	if err != nil {
		return "its id: " + err.Error()
	}
	if want := k.dir() + "/mailbox.json"; want != path {
		return fmt.Sprintf("its id %q belongs at %q", id, want)
	}
	if activeRun != "" {
		if rp, ok := s.snap.runPath(activeRun); !ok || !strings.HasPrefix(rp, k.dir()+"/runs/") {
			return fmt.Sprintf("its active run %q is not a record of it", activeRun)
		}
	}
	return ""
}

// checkOwned checks a run or an llm session: named by its id, in the
// folder of its mailbox, which has a record.
func (s *Store) checkOwned(path, id, mailboxID, what string, seen *mailboxSeen) string {
	if id != recordName(path) {
		return fmt.Sprintf("the %s's id %q is not its file name", what, id)
	}
	k, err := ParseMailboxID(mailboxID)
	if err != nil {
		return fmt.Sprintf("its mailbox_id: %v", err)
	}
	if !strings.HasPrefix(path, k.dir()+"/") {
		return fmt.Sprintf("its mailbox %q is not the folder it sits in", mailboxID)
	}
	if !seen.has(s.snap, k.dir()) {
		return fmt.Sprintf("its mailbox %q has no record", mailboxID)
	}
	return ""
}

// parentOf is the folder of a path.
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return ""
	}
	return path[:i]
}

// checkIndexes checks that every entry of the in-memory indexes points at
// a record of the tip.
func (s *Store) checkIndexes() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	missing := func(index, key, path string) {
		if s.snap.rec(path) == nil {
			out = append(out, fmt.Sprintf("index %s: %s points at %s, which is no record", index, key, path))
		}
	}
	for id, p := range s.snap.runs {
		missing("runs", id, p)
	}
	for rt, p := range s.snap.routes {
		missing("routes", fmt.Sprintf("%s %s", rt.By, rt.Value), p)
	}
	for rt, others := range s.snap.routeClaims {
		for _, p := range others {
			missing("routes", fmt.Sprintf("%s %s", rt.By, rt.Value), p)
		}
	}
	for p := range s.snap.mailboxFiles {
		missing("mailboxes", p, p)
	}
	for p := range s.snap.openMailboxes {
		missing("open mailboxes", p, p)
	}
	for run, p := range s.snap.sessionsByRun.all() {
		missing("llm sessions", run, p)
	}
	sort.Strings(out)
	return out
}

// CompactOptions bound the history Compact keeps.
type CompactOptions struct {
	// Keep is how many of the newest commits keep their own history (at
	// least 1); the older ones are squashed into one root commit holding
	// the tree they led to.
	Keep int
	// Archive, when set, keeps the whole history before the compaction in
	// branch alfred/archive/{time}, the audit log of the older commits.
	Archive bool
	// Now is the clock of the archive's name; nil: time.Now.
	Now func() time.Time
}

// CompactResult tells what Compact did.
type CompactResult struct {
	Before, After  int    // commits of the branch
	OldTip, NewTip string // the branch before and after
	Archive        string // the archive branch, when one was made
	PacksBefore    int    // packs before the repack (one after)
	LooseBefore    int    // loose objects before the repack (none after)
	Objects        int    // objects in the pack left
}

// ErrCompactRunning is wrapped by Compact's error when a server holds the
// store (stop it first).
var ErrCompactRunning = errors.New("the state store is open elsewhere: stop the server before compacting")

// Compact rewrites the branch of the repository at dir with a bounded
// history (opts.Keep commits; the older ones squashed into a root commit),
// optionally keeping the old history in an archive branch, then repacks
// every object still reachable into one pack without deltas (which the
// store reads fastest) and deletes the rest. It takes the store's lock: the
// server must be stopped. A state mirror replaces the remote branch with
// the new history at its next push (see package mirror).
func Compact(ctx context.Context, dir string, opts CompactOptions) (CompactResult, error) {
	if opts.Keep < 1 {
		return CompactResult{}, fmt.Errorf("compact: keep %d commits: want at least 1", opts.Keep)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := foldLeftJournal(ctx, dir); err != nil {
		return CompactResult{}, err
	}
	lock, err := lockFile(dir)
	if errors.Is(err, ErrLocked) {
		return CompactResult{}, fmt.Errorf("compact: %w: %w", ErrCompactRunning, err)
	}
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact: %w", err)
	}
	defer unlockFile(lock)
	res, err := rewrite(ctx, dir, opts)
	if err != nil {
		return res, err
	}
	if res.NewTip != res.OldTip {
		if err := retargetCheckpoint(dir, plumbing.NewHash(res.OldTip), plumbing.NewHash(res.NewTip)); err != nil {
			return res, err
		}
	}
	if err := repack(ctx, dir, &res); err != nil {
		return res, err
	}
	return res, nil
}

// rewrite squashes the history beyond opts.Keep commits and moves the
// branch (compare-and-swap) to the rewritten history.
func rewrite(ctx context.Context, dir string, opts CompactOptions) (CompactResult, error) {
	stor := openStorage(dir)
	defer stor.Close()
	tip, err := readTip(stor)
	if err != nil || tip.IsZero() {
		return CompactResult{}, fmt.Errorf("compact %s: no branch %s to compact (%v)", dir, RefName, err)
	}
	chain, err := firstParents(ctx, stor, tip)
	if err != nil {
		return CompactResult{}, err
	}
	res := CompactResult{Before: len(chain), After: len(chain), OldTip: tip.String(), NewTip: tip.String()}
	if len(chain) <= opts.Keep {
		return res, nil
	}
	newTip, err := squash(stor, chain, opts.Keep)
	if err != nil {
		return res, err
	}
	if opts.Archive {
		res.Archive = "refs/heads/alfred/archive/" + opts.Now().UTC().Format("2006-01-02T150405Z")
		if _, err := gitIn(ctx, dir, "update-ref", res.Archive, tip.String(), ""); err != nil {
			return res, fmt.Errorf("compact: archive the history: %w", err)
		}
	}
	if _, err := gitIn(ctx, dir, "update-ref", string(RefName), newTip.String(), tip.String()); err != nil {
		return res, fmt.Errorf("compact: move %s: %w", RefName, err)
	}
	res.After, res.NewTip = opts.Keep+1, newTip.String()
	return res, nil
}

// firstParents lists the commits of the branch from tip, newest first.
func firstParents(ctx context.Context, stor *filesystem.Storage, tip plumbing.Hash) ([]*object.Commit, error) {
	var chain []*object.Commit
	for h := tip; !h.IsZero(); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := object.GetCommit(stor, h)
		if err != nil {
			return nil, fmt.Errorf("compact: read commit %s: %w", h, err)
		}
		chain = append(chain, c)
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return chain, nil
}

// squash writes a root commit with the tree of chain[keep] (the newest
// commit dropped) and the keep newest commits again on top of it, the same
// but for their parent; it returns the new tip.
func squash(stor *filesystem.Storage, chain []*object.Commit, keep int) (plumbing.Hash, error) {
	base := chain[keep]
	oldest := chain[len(chain)-1]
	root := &object.Commit{
		Author: base.Author, Committer: base.Committer, TreeHash: base.TreeHash,
		Message: fmt.Sprintf("compacted: %d commits, from %s to %s, squashed into this one\n",
			len(chain)-keep, oldest.Committer.When.UTC().Format(time.RFC3339), base.Committer.When.UTC().Format(time.RFC3339)),
	}
	parent, err := storeCommit(stor, root)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for i := keep - 1; i >= 0; i-- {
		c := *chain[i]
		c.ParentHashes = []plumbing.Hash{parent}
		if parent, err = storeCommit(stor, &c); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return parent, nil
}

func storeCommit(stor *filesystem.Storage, c *object.Commit) (plumbing.Hash, error) {
	obj := stor.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("compact: encode commit: %w", err)
	}
	h, err := stor.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("compact: write commit: %w", err)
	}
	return h, nil
}

// repack packs every reachable object into one pack without deltas, drops
// the other packs and the loose objects, and counts what is left.
func repack(ctx context.Context, dir string, res *CompactResult) error {
	before, err := listPacks(dir, false)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	res.PacksBefore = len(before)
	loose, _ := gitIn(ctx, dir, "count-objects")
	fmt.Sscanf(loose, "%d objects", &res.LooseBefore)
	repack := gitcmd.Cmd{GitDir: dir, Config: []string{"repack.writeBitmaps=false", "pack.writeReverseIndex=false", "core.fsync=all",
		"pack.compression=0"}} // stored: the store copies objects out of packs without zlib
	if _, err := gitcmd.Run(ctx, repack, "repack", "-a", "-d", "-f", "-q", "--window=0", "--depth=0"); err != nil {
		return fmt.Errorf("compact: repack: %w", err)
	}
	if _, err := gitIn(ctx, dir, "prune", "--expire=now"); err != nil {
		return fmt.Errorf("compact: prune: %w", err)
	}
	after, err := listPacks(dir, false)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	for _, p := range after {
		res.Objects += p.objects
	}
	return nil
}

// gitIn runs the git CLI on the repository dir (internal/gitcmd).
func gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	return gitcmd.Run(ctx, gitcmd.Cmd{GitDir: dir}, args...)
}
