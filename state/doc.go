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
// goroutine, with no hand-off. All new objects of a
// commit (blobs, trees, the commit) go into one pack with its index; the
// pack, the index and objects/pack are fsynced, then the ref is moved by
// compare-and-swap against the tip the batch was built on and flushed (an
// in-place rewrite of the 41-byte ref file and one fdatasync). Only then do
// the in-memory indexes change and Update return. If the ref moved under the
// store, the tip is re-read and the functions run again.
//
// Each commit adds one pack. From Options.MergeAt packs on, a background
// merge rolls the small packs into one, keeping a geometric progression
// (like `git repack --geometric=2`), so the pack count stays logarithmic in
// the number of objects and no loose objects are written.
//
// # Reads
//
// Open reads the tip once (packed objects straight from the mapped packs,
// anything else through go-git) and keeps every record in memory; queries
// never touch the disk. A record that is not valid JSON, or whose
// format_version is newer than FormatVersion, does not stop Open: it is
// logged, listed by Problems, and returned as an *UnreadableError (path and
// commit) by the queries that meet it, next to the readable results.
//
// # Locking and inspection
//
// A writable Store holds an exclusive flock on {repo}/alfred.lock; a second
// one, in this process or another, gets an error wrapping ErrLocked that
// names the holder's pid. Options.ReadOnly opens without the lock, for
// `alfred state log` and `alfred state show` next to a running server: the
// writer only adds files and moves the ref in place, so a reader sees a
// consistent tip (a pack merged away while a reader opens may need a retry).
package state
