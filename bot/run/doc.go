// Package run carries out one run of an agent, from its preparation to its
// report: the session decision (resume or fresh, and why not), and, as the
// engine hands it over, the rest of a run's way (see Runner).
//
// It never imports bot, views, config or metrics: the engine (bot) keeps
// the mailboxes, the events, the journal, the lifecycle and what is
// decided and recorded after a run; it builds a run's Request and reads
// its Report.
package run
