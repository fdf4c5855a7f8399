// Package outcomes says what Alfred's work on one mailbox came to, derived
// from the records the engine keeps and nothing else: the mailbox, its runs
// and their llm sessions. It owns the Outcome of a mailbox and Derive, which
// makes it: the time from the assignment to the first plan, to the pull
// (merge) request and to the end; the CI-fix, review-fix and conflict
// rounds; the runs, tokens and cost (as the model gateway counted them, else
// as the CLI reported them, and which it was); the adapter and model of each
// phase; how the mailbox ended (merged, closed unmerged, blocked, paused,
// abandoned, still open) and who merged or closed it.
//
// Derive is pure: no I/O, no clock (now is an argument), no panic on any
// record, and no figure that looks like a value when it is none (a time not
// reached is a nil duration, never a zero; no negative duration, no NaN).
// What the records lacked or contradicted is listed in Outcome.Problems.
//
// Summarize sums up a set of outcomes (a project's, or every project's, over
// a period) the same way: the ends, the merge rate with the counts behind
// it, the median and 90th percentile of the times to the merge request and
// to the merge, the rounds, tokens and dollars per merged change, the runs
// failed and stalled, broken down by adapter and by adapter and model
// (AgentOf: the development phase's agent, else the first phase's).
//
// Load reads the outcomes of one project's issues from the state store
// (through Records, the few methods it needs): the pages, their JSON and
// the metrics' gauges share it. It reads the project it is given: whoever
// calls it decides first whether that project may be read.
//
// It imports no other Alfred package but `state`: the names of the phases
// and statuses it reads are the records' strings (a test holds them equal to
// `agents` and `bot/lifecycle`).
package outcomes
