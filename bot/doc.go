// Package bot is the engine: it takes normalized forge events, keeps one mailbox
// per issue or merge request, moves it through the lifecycle steered by labels
// and comments, queues runs and hands each to bot/run (which prepares, starts
// and reports it: worktree, prompt, sandbox, session, agent), records and
// decides from what it reports, cleans up, and owns the settings catalogue.
// The lifecycle itself (its table, Classify, the decisions, the comments'
// texts) is data and pure functions in bot/lifecycle; the engine performs
// what it says.
//
// It never imports views or config: the root package hands it what it needs.
package bot
