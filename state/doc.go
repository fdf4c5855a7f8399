// Package state owns Alfred's records: typed JSON records (mailboxes, runs,
// llm sessions, agent installations, setting overrides) and generic records
// the engine adds (such as a durable event queue), stored one file per record
// in branch alfred/state of a local bare git repository, written in durable
// transactions with go-git's formats, and the in-memory indexes the engine
// queries.
//
// # Layout
//
// Records are JSON files carrying a format_version. Paths are sharded so no
// tree grows with the history or with a project's size; every part is
// path-escaped (a GitLab owner "group/sub" becomes "group%2Fsub"):
//
//	mailboxes/{forge}/{owner}/{project}/{kind}/{iid/100}/{iid}/mailbox.json
//	mailboxes/.../{iid}/runs/{run_id}.json
//	mailboxes/.../{iid}/llm_sessions/{session_id}.json
//	installations/{adapter_id}/{runner}/{image or _}.json
//	settings/organization/{forge}/{owner}/{key}.json
//	settings/project/{forge}/{owner}/{project}/{key}.json
//	anything else ending in .json: generic records (Tx.Put, Store.Get)
//
// Runs and llm sessions live under their mailbox, so mailbox cleanup removes
// one folder, and a query that lists a mailbox's records meets the
// unreadable ones too.
//
// # Writes
//
// Update runs a function on a Tx and commits everything it wrote as one
// commit (author "Alfred <alfred@localhost>", message listing the paths).
// Concurrent Updates are grouped: the caller that finds no commit in
// progress leads, takes every queued transaction, applies them in order (one
// whose function fails is dropped with its error) and writes one commit for
// the batch; it hands leadership to the oldest waiting caller once its own
// transaction is answered. An uncontended Update commits on its own
// goroutine, with no hand-off and no wait. Under contention a new leader
// first waits, for at most a tenth of the last commit's time (1 ms at
// most), until as many transactions are queued as were active when the
// last commit ended: the writers it just answered are queueing their next
// ones, and without the wait they would miss the batch and the writers
// would split into two halves taking turns (a commit delay, as
// PostgreSQL's commit_delay, paid only when there is a group).
//
// A write's work does not grow with the records: its commit holds its
// blobs, one tree per folder on their paths (each bounded by the sharding)
// and the commit, in a pack of its own with its own index; the in-memory
// indexes change by the records written. What a lone write costs is the
// file system's: two new files, a lock renamed over the ref, two syncs,
// and the removal of the pack and index when a merge rolls them up.
// Options.Journal (the server sets it) takes those off a write's path:
// see "The journal" below.
//
// A commit costs two syncs. All its new objects (blobs, trees, the commit)
// go into one pack, built in memory and written under its final name, and
// the pack's index, written to a temporary file and renamed (git never
// sees it partial); the pack is fsynced: the first sync. Then the ref moves
// as git moves refs: {ref}.lock is created exclusively, the branch is
// compared with the tip the batch was built on (compare-and-swap), the lock
// file, holding the new commit, is renamed over the ref, and the ref's
// folder is fsynced: the second and last sync. Only then do the in-memory
// indexes change, Update return and Options.Committed hear of the commit.
// What is not synced on its own is covered otherwise: the pack's name and
// index reach the disk with the ref's folder sync where the file system
// journals its metadata in order (ext4, XFS); an index found missing or
// damaged is rebuilt from its pack by the next writable Open; and a ref
// file found empty or malformed (its rename reached the disk, its data did
// not: ext4 writes a file renamed over another first, other file systems
// may not) is recovered by pointing the branch at the newest commit of the
// packs, whose pack was synced before the ref moved. A writable Open also
// removes a stale {ref}.lock, temporary files and torn packs (a pack is only
// ever referenced once synced whole).
//
// # The journal
//
// With Options.Journal a write's durability point is one append and one
// fdatasync: the batch's changes (each path, put with its JSON or deleted)
// become one frame of {repo}/alfred.journal (length, CRC-32C, sequence
// number, body; journal.go), written at the journal's end and synced, and
// then the in-memory indexes change and Update returns. Group commit stays:
// a batch is one frame. The file is preallocated with zeros (FoldBytes and
// a quarter) and reused from its start after each fold, so an append
// changes no size or block map and fdatasync writes its data alone.
//
// A fold makes one commit of every write logged since the last, in the
// commit's way above (one pack synced, the ref moved by compare-and-swap
// and its folder synced), author and message as a commit's, the message
// ending with the trailer "Journal-Seq: N", the last frame it holds; then
// the journal starts over from its start. The leader folds once the
// journal passes Options.FoldBytes (1 MiB; its callers answered first), a
// background folder once writes pause for Options.FoldIdle (200 ms),
// Close folds, and Checkpoint folds on demand. Only folds move the branch:
// Committed (the mirror's push) hears of folds, Tip is the last fold, and
// what reads the branch from git (Log, MailboxLog; Compact, which folds a
// journal a stopped server left) folds first. The branch lags the
// acknowledged writes by at most FoldIdle, or FoldBytes of writes. When
// the fold finds the branch moved (git wrote to it), it re-reads it and
// applies the journal's writes on top, which win; the transactions are
// not run again.
//
// Open replays the frames after the trailer of the newest fold commit on
// the branch (commits git made on top carry none): from the journal's
// start it skips frames of earlier generations (sequence at most the one
// folded), takes the next ones in order, and stops at the first that is
// not whole, intact and next: the torn tail of a crash mid-append, zeros,
// or an earlier generation's frames. Frames are only acknowledged once
// synced, so what a crash tears was never acknowledged. A damaged frame
// followed by the next one intact is damage, not a tear: Open fails with
// ErrJournalCorrupt and changes nothing. A writable Open folds what it
// replayed; a crash between a fold's commit and the next append leaves
// frames the trailer already holds, which the next Open skips, so nothing
// is applied twice. A read-only Open replays too (beside a running server
// it sees every write synced), and a writable Open without Options.Journal
// folds what a journal left and removes it. Records still end up as JSON
// files of the branch, in commits in go-git's formats.
//
// Each commit adds one pack. From Options.MergeAt packs on, a background
// merge rolls the small packs into one, keeping a geometric progression
// (like `git repack --geometric=2`), so the pack count stays logarithmic in
// the number of objects and no loose objects are written. A merge syncs its
// pack, its index and the folder before it removes the packs it replaces.
//
// # Reads
//
// Open reads the tip once and keeps the decoded value of every record not
// cold (see The cold tier) in memory; the queries that filter and list
// read those. A record's JSON is not kept:
// Get, Show, Export, Verify and Tx.Get read it from the packs by its blob
// (blobs.go), mapping the packs on demand and looking again when a commit
// or a merge changed them. Of a run, memory keeps what the overview
// indexes, in 32 bytes (id, time, day, and the number of its class: status,
// phase and adapter, numbered once per store, which the day buckets are
// keyed by too): the queries returning runs (Runs, RunWithSessions,
// ListRuns, a mailbox row's last run, Tx.Run) decode them from their
// bodies. Of an llm session, memory keeps what the
// session resolver and the overview's totals ask (ids, adapter, time,
// tokens, cost, whether it has a native id, what it resumed and how it
// ended): RunWithSessions, PriorSession, a mailbox row's last session and
// Tx.LLMSession decode them from their bodies.
//
// A mailbox is finished when its status is MailboxDone (the lifecycle's
// one terminal status, which a bot test holds equal) and no run is in
// progress on it (Mailbox.Finished). An index of the mailbox records that
// are not (unreadable ones too, which might be) answers OpenMailboxes, the
// poller's and the run recovery's query: at 100k mailboxes, 1% open, a
// poll's pass went from 338 ms and 316 MiB allocated (every mailbox copied
// through Mailboxes) to 3.4 ms and 2.2 MiB (bot's BenchmarkPollDue). Of a
// finished mailbox, memory keeps what the overview's mailbox filters and
// order ask (its title, its UpdatedAt and whether it holds quarantined
// events; its status is MailboxDone): Mailbox, Routed, Mailboxes,
// ListMailboxes' rows and Tx.Mailbox decode it from its body, and its
// routes, when it leaves the tip, are read from its body too. On
// BenchmarkScale's year (111,111 mailboxes, 1M records) that took the heap
// with the store open from 526 to 460 MiB.
//
// The git trees are not kept either. Open walks them to list the files and
// keeps the paths, in byte order (a walk in git's order meets them so), in
// sorted blocks (paths.go): the folder listings (List, Runs, Settings,
// Installations, Tx.List) read those, and the files map shares their
// bytes, which Open makes back to back in large blocks (load.go's arena). A commit needs the folders on its paths only: it reads them from
// the packs from the root tree down, through a cache of 64k tree entries
// by tree hash (tree.go's tipTrees; a tree is immutable, so the cache is
// right whatever moved the branch), and caches the trees it writes, where
// the next commit likely writes again. Packed objects are read straight from the packs through
// their indexes (a stored block is a copy; anything else, such as the
// deltas of a `git gc` or loose objects, goes through go-git). Records are
// decoded by a fast path for the JSON the store writes (fastjson.go), which
// leaves anything else to encoding/json, in chunks spread over the CPUs,
// while Open indexes the chunks done, in path order; the overview's lists
// are sorted once at the end. A record that is not valid JSON, or whose
// format_version is newer than FormatVersion, does not stop Open: it is
// logged, listed by Problems, and returned as an *UnreadableError (path and
// commit) by the queries that meet it, next to the readable results.
//
// # The cold tier
//
// A finished mailbox leaves memory whole, with its runs and llm sessions,
// for the cold file, {repo}/alfred.cold (cold.go: its tables; cold_build.go:
// writing one from memory's finished mailboxes merged with the last file;
// cold_read.go: reading it; cold_tier.go: the snapshot's side; cold_list.go:
// the overview's pages). It is a file of sorted tables (internal/table),
// read by point lookups and ordered scans with one read of a block each;
// memory keeps the blocks' first keys and, of each cold mailbox, only its
// runs in the day buckets and a count in its project. The queries read
// memory and the file (snapshot.rec and its kin); a write into a cold
// mailbox makes it warm first (Store.warm: its records back into
// memory from the file, unchanged), and the file's copy is masked until the
// next file. Mailboxes are made cold at Close and, once memory holds
// enough finished ones, in the background (cold_freeze.go): what is taken
// is read under the read lock, the file written with no lock held, and the
// leader installs it before its next batch, leaving warm a mailbox that a
// write changed meanwhile. A route two mailboxes claim names the greater
// path, in memory and in the file alike (routes.go).
//
// # The open checkpoint
//
// Reading and decoding every record is what makes a cold open slow (at
// 100k records: inflating and decoding half its CPU time, walking the
// trees and the journal trailer a fifth). {repo}/alfred.index holds, for
// one commit of the branch, what that computes of each record: its path,
// its blob and the compact value memory keeps (a run's runLite with its
// class spelled out, an llm session's sessionLite, a finished mailbox's
// mailboxLite and its routes; generic records need none), plus the root
// tree and the journal sequence the commit folded, in a binary form with a
// header (magic, format version, commit, counts, by which Open sizes its
// maps, the routes' too, and the cold file it goes with, by size and
// checksum: the checkpoint holds the records memory keeps, the cold file
// the others) and a CRC-32C of the whole (checkpoint.go). A cold file
// missing, damaged or not the one named makes Open read every record. Records whose value is kept whole (open mailboxes,
// installations, settings) or that are unreadable are marked so, and Open
// decodes them from their blobs as a full load does, so their values and
// errors (Problems) come out the same.
//
// Open trusts the checkpoint only when it was made at the branch tip and
// its size, checksum, magic, version, counts and every bound (paths in
// order, tags matching the paths' kinds, references in range, the records
// filling it exactly) check; then it indexes the records as a full load
// does and replays the journal on top. Otherwise it logs one line saying
// why (none when the file is missing; at Info when the branch moved since,
// after a crash or a commit by git, at Debug for a read-only store, which
// beside a running server finds it stale as a rule) and loads whole, with
// the same result.
//
// It is written never on a write's path: a writable Open that loaded whole
// encodes it as it indexes and writes it in the background; Close, once
// the journal is folded and the snapshot is the tip, writes the new tip's
// unless the header of the one there names the tip already (its checksum
// is not read then: damage is caught by the next Open, which loads whole
// and replaces it). It takes the entries of the checkpoint there (whatever
// its commit, once checked whole) whose path and blob are unchanged,
// copying their bytes with their paths re-encoded and their string
// references renumbered (checkpoint_copy.go; an entry that does not read
// is decoded from its blob instead), and decodes the others from their
// blobs, so the file holds what a full load computes, not values as
// written through this process. It is written to a temporary file, synced, renamed over the
// old one and the folder synced. A crash leaves it stale; the next
// writable Open loads whole and puts it back.
//
// # Locking and inspection
//
// A writable Store holds an exclusive flock on {repo}/alfred.lock; a second
// one, in this process or another, gets an error wrapping ErrLocked that
// names the holder's pid; LockHolder finds that process (through
// /proc/locks, as this pid namespace sees it), so that a command can signal
// the server. Options.ReadOnly opens without the lock, for
// `alfred state log` and `alfred state show` next to a running server: the
// writer only adds files and renames them into place, so a reader sees a
// consistent tip (a pack merged away while a reader opens may need a retry).
// A read-only store repairs nothing: after a crash, the next writable Open
// does.
//
// # Health
//
// Health tells a server whether its store takes writes: it is told of each
// commit (Options.Observe) and says since when and why commits fail, and it
// probes the disks of the store's folder (and any other the server writes
// to) with a small synced write, at most every two seconds; Writable says
// whether this process may write in a store's folder at all.
//
// It imports no other Alfred package but internal/gitcmd and its own
// internal/table.
package state
