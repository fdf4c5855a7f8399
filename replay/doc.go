// Package replay owns `alfred replay`: recorded issues run again through the
// real engine on a forge, so that a change of prompt, of agent CLI or of
// model is measured before it reaches people. It owns the corpus (a folder
// of cases: the issue, its thread, a repository snapshot and a check
// command; Load validates it strictly), the forge's side of a replay (a
// fresh repository per case and adapter, the snapshot pushed, the bot made
// a collaborator, the webhook, the issue and its thread opened and assigned:
// Gitea and Forgejo, through an admin token), the wait for the mailbox to
// reach a pull request or an end, the check of the pull request's branch (a
// clone made by the bot's hardened git, the check run in a sandbox, never on
// the host) and the report: per adapter and model the cases, the solved ones
// and the outcome figures of package outcomes (a solved case counts as
// merged), as JSON and as a table.
//
// The engine itself is not built here: the root wiring starts it in the same
// process, as serve does, and hands this package the state store it writes.
//
// It never imports `bot`, `views`, `config` or `agents`.
package replay
