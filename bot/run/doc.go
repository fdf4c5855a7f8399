// Package run carries out one run of an agent, from its preparation to its
// report (Runner.Run): the working copy and the trust boundary (Repos,
// Worktree: the agent's clone, the bot's private staging repository, the
// push with a scoped credential; Stage and the safe-output checks), the
// prompt (Prompt), the sandbox spec, the session decision (SessionResolver:
// resume or fresh, adapter_changed) and its handoff, the seal behind the
// model gateway with the token budget handed to it, the stall watch, the
// live output wired into the sandbox, the transcript read back, and the
// change committed and pushed, or held for a person.
//
// It never imports bot, views, config or metrics (bot/lifecycle, the
// lifecycle's data and texts, it may): the engine (bot) keeps the
// mailboxes, the events, the journal, the lifecycle, the metrics and what
// is decided and recorded after a run. It builds a run's Request from the
// mailbox and the project's settings and reads the Report and the record
// the run filled; stopping a run is canceling the context Run was given.
package run
