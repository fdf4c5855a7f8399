// Package bot is the engine: it takes normalized forge events, keeps one mailbox
// per issue or merge request, moves it through the lifecycle steered by labels
// and comments, queues and executes runs (worktree, sandbox, agent), resolves
// and stores named agent sessions, cleans up, and owns the settings catalogue.
// The lifecycle itself (its table, Classify, the decisions, the comments'
// texts) is data and pure functions in bot/lifecycle; the engine performs
// what it says.
//
// It never imports views or config: the root package hands it what it needs.
package bot
