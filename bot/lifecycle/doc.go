// Package lifecycle is the lifecycle of an issue mailbox, as data and pure
// functions: the statuses, command and type labels (the label catalogue,
// Labels), every transition (the table, table.go), what each intent does
// from each status (the dispatch table, dispatch.go: the engine's dispatch
// is a lookup in it), Classify, which makes an intent of a forge event, the decisions (DecideCommand, DecideRunEnd,
// DecideMergeRequest: a mailbox and what happened in, the mailbox and the
// actions out), the texts of the bot's comments, and the diagram
// docs/lifecycle.md (Diagram).
//
// It performs nothing: no forge call, no store, no run. The engine (package
// bot) gathers the facts, performs the effect of the row Dispatch finds and
// the actions a decision returns, and moves a mailbox only along a row of the
// table.
//
// It never imports bot, views, config, sandbox or gateway (TestImportRules);
// it reads forges, state and agents for their types only.
package lifecycle
