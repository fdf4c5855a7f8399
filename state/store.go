package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Options tune a Store. The zero value is a writable store.
type Options struct {
	// ReadOnly opens the repository for inspection: no lock is taken (a
	// running server may hold it), nothing is created or cleaned, and
	// Update fails with ErrReadOnly. The store shows the tip as of Open.
	ReadOnly bool
	// Logger receives warnings (unreadable records, failed pack merges).
	Logger *slog.Logger
	// MaxBatch caps how many concurrent transactions share one commit
	// (default 256).
	MaxBatch int
	// MergeAt is the pack count from which small packs are merged in the
	// background (default 32).
	MergeAt int
	// Observe, when set, is told of each durable write the store makes and
	// of each fold: its time and its error (nil: durable). A write is a
	// batch's journal append (retries included); a batch that changes
	// nothing writes nothing and is not told. While folds fail, the writes
	// that succeed are not told (the store is not healthy until a fold
	// succeeds). It runs on the writing goroutine, after the callers are
	// answered.
	Observe func(took time.Duration, err error)
	// Committed, when set, is told of each commit once it is published: a
	// fold moved the branch to it. It runs on the folding goroutine, which
	// holds the journal (writes wait), in commit order. It must not block.
	// It may read the store (Tip, Get...) but must not call Update or
	// Checkpoint.
	Committed func(commit string)
	// Journal makes a write durable by one append and fdatasync to the
	// journal, {repo}/alfred.journal, rather than by a commit: Update
	// returns once its batch's frame is synced, and the logged writes are
	// folded into one commit of the branch in the background (see
	// FoldBytes, FoldIdle, Checkpoint and the package documentation).
	// Without it every batch is a commit of its own. Open replays a
	// journal left unfolded in either case.
	Journal bool
	// FoldBytes is the journal size from which its writes are folded into
	// a commit (default 1 MiB); the journal file is preallocated a quarter
	// larger.
	FoldBytes int64
	// FoldIdle is how long the store waits after the last write before it
	// folds the journal (default 200 ms).
	FoldIdle time.Duration
}

// ErrReadOnly is returned by Update on a store opened with Options.ReadOnly.
var ErrReadOnly = errors.New("state store is read-only")

// ErrClosed is returned by Update after Close.
var ErrClosed = errors.New("state store is closed")

// Store is the git-backed record store. Its queries read in-memory indexes;
// Update writes durable commits. It is safe for concurrent use.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File

	mu       sync.RWMutex // guards snap and problems
	snap     *snapshot
	problems []*UnreadableError
	blobs    *blobReader // the records' JSON, read on demand

	// Group commit: Update queues its request; the caller that finds no
	// leader becomes it and commits queued batches until its own request is
	// answered, then hands leadership to the oldest waiting request.
	qmu       sync.Mutex
	queue     []*request
	leading   bool
	lastBatch int           // requests in the last batch taken
	lastTook  time.Duration // how long the last commit took
	lastEnd   time.Time     // when it ended
	expect    int           // requests the next leader waits for (see gather)
	arrived   chan struct{} // signalled once the queue holds expect requests
	closed    bool
	inflight  sync.WaitGroup // Update calls queued and not yet answered
	closeOnce sync.Once

	packMu        sync.Mutex // guards packs, merging and mergeFailures
	packCond      *sync.Cond // signalled when a merge ends
	packs         []packInfo
	merging       bool
	mergeFailures int // merges failed in a row (the log says the first)
	mergeWG       sync.WaitGroup

	// The journal (journal.go, fold.go): the leader appends batches to it,
	// the folder folds them into commits; jmu serializes the two.
	jmu      sync.Mutex
	jr       *journal
	pend     *pending
	foldErr  error // the last fold's
	foldKick chan struct{}
	foldStop chan struct{}
	foldWG   sync.WaitGroup

	// The open checkpoint (checkpoint.go): the journal sequence the tip
	// folded, when Open read it from the checkpoint (ckFoldedOK), and the
	// background write of the checkpoint after a full load.
	ckFolded   uint64
	ckFoldedOK bool
	ckWG       sync.WaitGroup
	ckLoaded   *loadedCk

	// The background freeze (cold_freeze.go).
	freezeRunning atomic.Bool
	freezeWG      sync.WaitGroup
	freezeMu      sync.Mutex // guards freezeDone and freezeStopped
	freezeDone    *freezing
	freezeStopped bool // Close has begun
}

type request struct {
	ctx      context.Context
	fn       func(*Tx) error
	done     chan error    // the result, buffered
	lead     chan struct{} // leadership handed to this request's caller
	answered bool          // set under qmu once the request's commit ended
}

// Open opens the state repository at dir, creating a bare repository with
// branch alfred/state when it is missing, and loads the tip into memory. A
// writable Open takes {dir}/alfred.lock; a second writable Store on the same
// repository, in this process or another, gets an error wrapping ErrLocked.
// Unreadable records do not fail Open: see Problems.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.MergeAt <= 1 {
		opts.MergeAt = 32
	}
	if opts.FoldBytes <= 0 {
		opts.FoldBytes = defaultFoldBytes
	}
	if opts.FoldIdle <= 0 {
		opts.FoldIdle = defaultFoldIdle
	}
	s := &Store{dir: dir, opts: opts, log: opts.Logger.With("state", dir), arrived: make(chan struct{}, 1), blobs: newBlobReader(dir)}
	s.packCond = sync.NewCond(&s.packMu)
	if opts.ReadOnly {
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
			return nil, fmt.Errorf("open state %s read-only: %w", dir, err)
		}
	} else if err := s.prepare(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		s.release()
		return nil, err
	}
	if err := s.load(); err != nil {
		s.release()
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	}
	if err := s.startJournal(); err != nil {
		s.jr.close()
		s.release()
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	}
	if ck := s.ckLoaded; ck != nil {
		s.ckLoaded = nil
		s.saveLoaded(ck)
	}
	return s, nil
}

// prepare readies a writable store: it takes the lock, creates the
// repository when missing and repairs what a killed writer left (see
// listPacks and repairRef).
func (s *Store) prepare() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("open state %s: %w", s.dir, err)
	}
	lock, err := lockFile(s.dir)
	if err != nil {
		return err
	}
	s.lock = lock
	err = initRepo(s.dir)
	if err == nil {
		s.packs, err = listPacks(s.dir, true)
	}
	if err == nil {
		err = repairRef(s.dir, s.packs, s.log.Warn)
	}
	if err != nil {
		s.release()
		return fmt.Errorf("open state %s: %w", s.dir, err)
	}
	return nil
}

// release releases the lock.
func (s *Store) release() error { return unlockFile(s.lock) }

// initRepo creates the bare repository with go-git when it has no HEAD and
// syncs what was created.
func initRepo(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	_, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: RefName},
	})
	if err != nil {
		return fmt.Errorf("init state repository %s: %w", dir, err)
	}
	for _, d := range []string{"refs/heads/alfred", "objects/pack"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("init state repository %s: %w", dir, err)
		}
	}
	for _, d := range []string{"refs/heads/alfred", "refs/heads", "refs", "objects/pack", "objects", "."} {
		if err := syncDir(filepath.Join(dir, d)); err != nil {
			return err
		}
	}
	return syncDir(filepath.Dir(filepath.Clean(dir)))
}

// load reads the tip at Open: from the open checkpoint when it is the
// tip's and intact, else whole (see reload). Beside a writer (a read-only
// store) a merge may remove packs while they are read: the read is tried
// afresh, readTries times at most, readPause apart.
func (s *Store) load() error {
	o, err := loadFromCheckpoint(s.dir, s.packs)
	if err == nil {
		s.installLoaded(o)
		return nil
	}
	switch {
	case errors.Is(err, errStaleCheckpoint):
		// Beside a running server (a read-only store) it is stale as a rule.
		level := slog.LevelInfo
		if s.opts.ReadOnly {
			level = slog.LevelDebug
		}
		s.log.Log(context.Background(), level, "state open checkpoint not used; reading every record", "reason", err)
	case !errors.Is(err, fs.ErrNotExist):
		s.log.Warn("state open checkpoint not used; reading every record", "reason", err)
	}
	var ck *ckEncoder
	if useCheckpoint && !s.opts.ReadOnly {
		ck = newCkEncoder()
	}
	err = s.reloadWith(s.packs, ck)
	for try := 1; err != nil && s.opts.ReadOnly && try < readTries; try++ {
		time.Sleep(readPause)
		err = s.reload(nil)
	}
	if err == nil && ck != nil && !s.snap.tip.IsZero() {
		s.ckLoaded = &loadedCk{enc: ck, tip: s.snap.tip, root: s.snap.trees.root} // written once Open succeeds
	}
	return err
}

// reload replaces the in-memory state with the tip on disk, read from
// packs (listed afresh when nil).
func (s *Store) reload(packs []packInfo) error { return s.reloadWith(packs, nil) }

// reloadWith is reload adding every record to ck (nil: none).
func (s *Store) reloadWith(packs []packInfo, ck *ckEncoder) error {
	snap, problems, err := load(s.dir, packs, ck)
	if err != nil {
		return err
	}
	s.installLoaded(opened{snap: snap, problems: problems})
	return nil
}

// installLoaded makes what Open or a reload read the store's state.
func (s *Store) installLoaded(o opened) {
	for _, p := range o.problems {
		s.log.Warn("unreadable state record", "path", p.Path, "commit", p.Commit, "err", p.Err)
	}
	o.snap.useBlobs(s.blobs)
	s.mu.Lock()
	s.snap, s.problems = o.snap, o.problems
	s.ckFolded, s.ckFoldedOK = o.folded, o.fromCk
	s.mu.Unlock()
}

// Close stops accepting transactions, waits for queued ones, folds the
// journal, waits for any pack merge, and releases the lock; it unmaps the
// packs the records were read from (a later read maps them again). When
// the fold fails, its error is returned and the next Open replays the
// journal.
func (s *Store) Close() error {
	return s.shut(true)
}

// shut closes the store, folding the journal first when fold is set (a
// test leaves it unfolded, as a crash would).
func (s *Store) shut(fold bool) error {
	if s.opts.ReadOnly {
		s.blobs.close()
		return nil
	}
	var err error
	s.closeOnce.Do(func() {
		s.qmu.Lock()
		s.closed = true
		s.qmu.Unlock()
		s.inflight.Wait()
		if s.foldStop != nil {
			close(s.foldStop)
			s.foldWG.Wait()
		}
		if fold && s.jr != nil {
			s.jmu.Lock()
			err = s.foldLocked()
			s.jmu.Unlock()
		}
		err = errors.Join(err, s.jr.close())
		s.mergeWG.Wait()
		s.ckWG.Wait()
		s.stopFreezes()
		s.installFreeze()
		if fold && err == nil {
			if cerr := s.saveCheckpoint(); cerr != nil {
				s.log.Warn("write the state open checkpoint fails", "err", cerr)
			}
		}
		s.blobs.close()
		err = errors.Join(err, s.release())
	})
	return err
}

// Update runs fn in a transaction and commits its writes durably: the
// objects and the ref are on disk when Update returns nil (with
// Options.Journal: its journal frame; a fold commits it later). Concurrent
// Updates may share one commit; fn runs in order after the transactions
// queued before it and sees their writes. If fn returns an error its writes
// are dropped and Update returns that error. If the branch moved under the
// store (compare-and-swap lost) the tip is re-read and fn runs again, so fn
// must not have side effects outside tx (with Options.Journal the fold
// re-reads the tip and applies the logged writes on it; fn may still run
// twice when its batch's frame does not fit in the journal). fn must not call Update.
// Once queued, a transaction is committed or failed even if ctx ends.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &request{ctx: ctx, fn: fn, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return ErrClosed
	}
	s.inflight.Add(1)
	defer s.inflight.Done()
	s.queue = append(s.queue, req)
	if s.expect > 0 && len(s.queue) >= s.expect {
		select {
		case s.arrived <- struct{}{}:
		default:
		}
	}
	if !s.leading {
		s.leading = true
		s.qmu.Unlock()
		s.gather()
		s.lead(req)
	} else {
		s.qmu.Unlock()
	}
	for {
		select {
		case err := <-req.done:
			return err
		case <-req.lead:
			s.gather()
			s.lead(req)
		}
	}
}

// lead commits queued batches, one at a time, until own is answered; then
// it passes leadership to the oldest queued request, or ends it.
func (s *Store) lead(own *request) {
	for {
		s.qmu.Lock()
		if len(s.queue) == 0 {
			s.leading = false
			s.expect = s.lastBatch // the writers just answered may come back (see gather)
			s.qmu.Unlock()
			return
		}
		if own.answered {
			next := s.queue[0]
			s.expect = min(len(s.queue)+s.lastBatch, s.opts.MaxBatch)
			s.qmu.Unlock()
			next.lead <- struct{}{}
			return
		}
		n := min(len(s.queue), s.opts.MaxBatch)
		batch := append([]*request(nil), s.queue[:n]...)
		s.queue = append(s.queue[:0], s.queue[n:]...)
		s.lastBatch = n
		s.qmu.Unlock()
		start := time.Now()
		s.commitBatch(batch)
		s.qmu.Lock()
		s.lastEnd = time.Now()
		s.lastTook = s.lastEnd.Sub(start)
		s.qmu.Unlock()
	}
}

// gather runs before a leader takes its first batch. Under contention the
// writers just answered are waking to queue their next transactions, and
// without a wait the next batch would leave them to the one after it: the
// writers would split into two halves taking turns, each commit carrying
// half of them. So when the last batch held several transactions and ended
// moments ago, it waits until the queue holds as many requests as were
// active then, or for a tenth of the last commit's time (at most 1 ms): a
// group commit delay, as PostgreSQL's commit_delay, paid only when there
// is a group. A lone writer never waits.
func (s *Store) gather() {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	want, wait := s.expect, min(s.lastTook/10, time.Millisecond)
	s.expect = 0
	if want <= 1 || len(s.queue) >= want || time.Since(s.lastEnd) > wait {
		return
	}
	s.expect = want
	defer func() { s.expect = 0 }()
	timer := time.NewTimer(wait - time.Since(s.lastEnd))
	defer timer.Stop()
	for len(s.queue) < want {
		s.qmu.Unlock()
		select {
		case <-s.arrived:
		case <-timer.C:
			s.qmu.Lock()
			return
		}
		s.qmu.Lock()
	}
}

const maxAttempts = 5

func (s *Store) commitBatch(batch []*request) {
	s.installFreeze()
	defer s.maybeFreeze()
	if s.jr != nil {
		s.commitLogged(batch)
		return
	}
	start := time.Now()
	results := make([]error, len(batch))
	var err error
	var commit plumbing.Hash
	for attempt := 1; ; attempt++ {
		var lost bool
		commit, lost, err = s.tryCommit(batch, results)
		if err == nil && !lost {
			break
		}
		if err == nil && attempt >= maxAttempts {
			err = fmt.Errorf("commit state: branch %s kept moving under the store (%d attempts)", RefName, attempt)
		}
		if err != nil {
			break
		}
		s.log.Warn("state branch moved under the store; re-reading the tip", "attempt", attempt)
		if err = s.reload(nil); err != nil {
			break
		}
	}
	s.answer(batch, results, err)
	if (!commit.IsZero() || err != nil) && s.opts.Observe != nil {
		s.opts.Observe(time.Since(start), err)
	}
	if !commit.IsZero() && s.opts.Committed != nil {
		s.opts.Committed(commit.String())
	}
}

// answer marks the batch answered and gives each caller its result: its
// transaction's own error, else err.
func (s *Store) answer(batch []*request, results []error, err error) {
	s.qmu.Lock()
	for _, r := range batch {
		r.answered = true
	}
	s.qmu.Unlock()
	for i, r := range batch {
		if results[i] == nil {
			results[i] = err
		}
		r.done <- results[i]
	}
}

// tryCommit applies the batch to a fresh overlay and commits it. It returns
// the commit when it moved the ref to a new one (zero when the batch
// changes nothing), and lost when the ref on disk is not the tip the batch
// was built on.
func (s *Store) tryCommit(batch []*request, results []error) (commit plumbing.Hash, lost bool, err error) {
	snap := s.snap // only the leader replaces or mutates it
	overlay := runBatch(snap, batch, results)
	if err := s.warm(snap, overlay); err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("commit state: %w", err)
	}
	changes := keepChanges(snap, overlay)
	if len(changes) == 0 {
		return plumbing.ZeroHash, false, nil
	}
	newTrees, objs, err := buildTrees(snap.trees, changes)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("commit state: %w", err)
	}
	// Blobs in path order: a cold open reads them in that order.
	for _, p := range slices.Sorted(maps.Keys(overlay)) {
		if c := overlay[p]; !c.deleted {
			objs = append(objs, gitObject{typ: plumbing.BlobObject, data: c.raw, hash: c.hash})
		}
	}
	c := newObject(plumbing.CommitObject, encodeCommit(newTrees[""].hash, snap.tip, changes))
	objs = dedupe(append(objs, c))
	pack, err := writeCommitPack(s.dir, objs)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("commit state: %w", err)
	}
	s.addPack(pack)
	if lost, err := moveRef(s.dir, snap.tip, c.hash, false); err != nil || lost {
		if err != nil {
			err = fmt.Errorf("commit state: %w", err)
		}
		return plumbing.ZeroHash, lost, err
	}
	s.apply(snap, c.hash, overlay, newTrees)
	return c.hash, false, nil
}

// runBatch runs the batch's functions in order on one overlay of writes,
// dropping the writes of those that fail (their error goes to results).
func runBatch(snap *snapshot, batch []*request, results []error) map[string]*change {
	overlay := map[string]*change{}
	for i, r := range batch {
		results[i] = nil
		tx := &Tx{ctx: r.ctx, snap: snap, base: overlay, writes: map[string]*change{}}
		if err := callTx(r.fn, tx); err != nil {
			results[i] = err
			continue
		}
		for p, c := range tx.writes {
			overlay[p] = c
		}
	}
	return overlay
}

// warm makes warm the cold mailboxes overlay writes in, before the write
// is kept against what they hold, under the write lock when there are
// any; the caller leads (only the leader, and the folder under jmu,
// change the snapshot). A mailbox the file cannot give back fails the
// write, which changes nothing.
func (s *Store) warm(snap *snapshot, overlay map[string]*change) error {
	if snap.cold == nil {
		return nil
	}
	cold := snap.coldDirs(maps.Keys(overlay))
	if len(cold) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dir := range cold {
		if err := snap.warmUp(dir); err != nil {
			return err
		}
	}
	return nil
}

// keepChanges drops from overlay what does not change the tip and returns
// the changes left, hashing the new blobs.
func keepChanges(snap *snapshot, overlay map[string]*change) map[string]fileChange {
	changes := map[string]fileChange{}
	for p, c := range overlay {
		old := snap.files[p]
		if c.deleted {
			if old == nil {
				delete(overlay, p)
				continue
			}
			changes[p] = fileChange{deleted: true}
			continue
		}
		c.hash = hashObject(plumbing.BlobObject, c.raw)
		if old != nil && old.hash == c.hash {
			delete(overlay, p)
			continue
		}
		changes[p] = fileChange{hash: c.hash}
	}
	return changes
}

// callTx runs fn, turning a panic into an error for that transaction only.
func callTx(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("state transaction panicked: %v", r)
		}
	}()
	return fn(tx)
}

func dedupe(objs []gitObject) []gitObject {
	seen := make(map[plumbing.Hash]bool, len(objs))
	out := objs[:0]
	for _, o := range objs {
		if !seen[o.hash] {
			seen[o.hash] = true
			out = append(out, o)
		}
	}
	return out
}

// apply installs a committed (or logged) batch into the in-memory state.
func (s *Store) apply(snap *snapshot, tip plumbing.Hash, overlay map[string]*change, trees map[string]*treeNode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(snap, tip, overlay, trees)
}

// applyLocked is apply with s.mu held.
func (s *Store) applyLocked(snap *snapshot, tip plumbing.Hash, overlay map[string]*change, trees map[string]*treeNode) {
	snap.tip = tip
	snap.setTrees(trees)
	for p, c := range overlay {
		if old := snap.files[p]; old != nil {
			snap.unindex(p, old)
			if old.err != nil {
				s.dropProblem(p)
			}
		}
		if c.deleted {
			snap.deleteFile(p)
			continue
		}
		r := &record{hash: c.hash, val: c.val}
		snap.setFile(p, r)
		snap.index(p, r)
	}
}

func (s *Store) dropProblem(path string) {
	for i, p := range s.problems {
		if p.Path == path {
			s.problems = append(s.problems[:i:i], s.problems[i+1:]...)
			return
		}
	}
}

// encodeCommit formats a commit whose message lists what changed.
func encodeCommit(tree, parent plumbing.Hash, changes map[string]fileChange) []byte {
	ts := strconv.FormatInt(time.Now().Unix(), 10) + " +0000"
	var b bytes.Buffer
	b.WriteString("tree " + tree.String() + "\n")
	if !parent.IsZero() {
		b.WriteString("parent " + parent.String() + "\n")
	}
	b.WriteString("author Alfred <alfred@localhost> " + ts + "\n")
	b.WriteString("committer Alfred <alfred@localhost> " + ts + "\n\n")
	b.WriteString(commitMessage(changes))
	return b.Bytes()
}

// commitMessage lists up to 3 changes on one line, more as a summary line
// and the first 100, one a line.
func commitMessage(changes map[string]fileChange) string {
	paths := slices.Sorted(maps.Keys(changes))
	line := func(p string) string {
		if changes[p].deleted {
			return "delete " + p
		}
		return "put " + p
	}
	if len(paths) <= 3 {
		var lines []string
		for _, p := range paths {
			lines = append(lines, line(p))
		}
		return strings.Join(lines, "; ") + "\n"
	}
	dels := 0
	for _, c := range changes {
		if c.deleted {
			dels++
		}
	}
	var parts []string
	if puts := len(paths) - dels; puts > 0 {
		parts = append(parts, fmt.Sprintf("put %d records", puts))
	}
	if dels > 0 {
		parts = append(parts, fmt.Sprintf("delete %d records", dels))
	}
	var msg strings.Builder
	msg.WriteString(strings.Join(parts, "; ") + "\n\n")
	for i, p := range paths {
		if i == 100 {
			fmt.Fprintf(&msg, "... and %d more\n", len(paths)-i)
			break
		}
		msg.WriteString(line(p) + "\n")
	}
	return msg.String()
}

// addPack records a new pack and starts a background merge when the pack
// count reaches Options.MergeAt and the packs are not geometric. When
// commits outrun a running merge up to twice MergeAt packs, it waits for the
// merge, so the pack count stays bounded whatever the write rate.
func (s *Store) addPack(p packInfo) {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	s.packs = append(s.packs, p)
	for s.merging && len(s.packs) >= 2*s.opts.MergeAt {
		s.packCond.Wait()
	}
	if s.merging || len(s.packs) < s.opts.MergeAt {
		return
	}
	rollup := geometricRollup(s.packs)
	if rollup == nil {
		return
	}
	s.merging = true
	s.mergeWG.Add(1)
	go func() {
		defer s.mergeWG.Done()
		merged, err := mergePacks(s.dir, rollup)
		s.packMu.Lock()
		defer s.packMu.Unlock()
		defer s.packCond.Broadcast()
		s.merging = false
		if errors.Is(err, errDeltaPack) {
			// Leave packs written by git alone from now on.
			for i := range s.packs {
				if strings.Contains(err.Error(), s.packs[i].name) {
					s.packs[i].pinned = true
				}
			}
		}
		if err != nil {
			s.mergeFailed(len(rollup), err)
			return
		}
		s.mergeSucceeded()
		gone := map[string]bool{}
		for _, p := range rollup {
			gone[p.name] = true
		}
		kept := s.packs[:0]
		for _, p := range s.packs {
			if !gone[p.name] {
				kept = append(kept, p)
			}
		}
		s.packs = append(kept, merged)
	}()
}

// mergeFailed logs a failed pack merge: the first of a series as a warning,
// the next ones (a full disk fails every try) at debug level. Called with
// packMu held.
func (s *Store) mergeFailed(packs int, err error) {
	s.mergeFailures++
	if s.mergeFailures == 1 {
		s.log.Warn("merge state packs fails; the packs stay as they are and are merged later (logged again once it succeeds)", "packs", packs, "err", err)
		return
	}
	s.log.Debug("merge state packs failed again", "packs", packs, "failures", s.mergeFailures, "err", err)
}

// mergeSucceeded ends a series of failed merges in the log. Called with
// packMu held.
func (s *Store) mergeSucceeded() {
	if s.mergeFailures > 0 {
		s.log.Info("merge state packs succeeds again", "failures", s.mergeFailures)
		s.mergeFailures = 0
	}
}

// PackCount returns how many packs the repository holds (for monitoring the
// object store's growth).
func (s *Store) PackCount() int {
	s.packMu.Lock()
	defer s.packMu.Unlock()
	return len(s.packs)
}
