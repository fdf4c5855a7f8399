// Package state owns Alfred's records: typed JSON records (mailboxes, runs,
// llm sessions, agent installations, setting overrides) stored one file per
// record in branch alfred/state of a local bare git repository, written in
// durable transactions with go-git, and the in-memory indexes the engine
// queries.
package state
