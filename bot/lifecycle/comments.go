package lifecycle

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/alchemic-studio/alfred/state"
)

// Comment kinds: the <kind> of each managed comment's marker. Each is posted
// once per cause: the key mixes the mailbox, the kind and the triggering event.
const (
	KindAcknowledgement     = "acknowledgement"
	KindPlan                = "plan"
	KindPlanValidated       = "plan_validated"
	KindQuestions           = "questions" // the analysis needs answers first
	KindStatusLabelRestored = "status_label_restored"
	KindRetryResumed        = "retry_resumed"
	KindBlocked             = "blocked"
	KindAnswer              = "answer"
	KindNothingToDo         = "nothing_to_do" // a run found its work already done
	KindSession             = "session"       // the status comment, edited in place
	KindBudgetPaused        = "budget_paused" // the issue reached its cost budget
	KindBudgetStep          = "budget_step"   // a person granted one more budget step
	KindPlanChanged         = "plan_changed"  // the validated plan or description changed
)

// TextAcknowledgement thanks the person who gave the bot the issue.
func TextAcknowledgement(author string) string {
	return fmt.Sprintf("Thanks %s, I'm on it. I'll write a functional analysis into the description and post an implementation plan here.", mention(author))
}

func textPlan(plan string, needValidation bool) string {
	plan = strings.TrimSpace(plan)
	if needValidation {
		return plan + "\n\nThe implementation plan is ready for validation. Add the `ai::validate_plan` label to let me start."
	}
	return plan + "\n\nStarting the development from this plan."
}

func textPlanChanged(changed string) string {
	return fmt.Sprintf("I did not start: %s since the plan was validated, so what I would work from is no longer what was approved.\n\nRead the plan and the description again, and add `%s` to let me start from them as they are now.",
		changed, CommandValidatePlan.Label())
}

func textPlanOnly(plan string) string {
	return strings.TrimSpace(plan) + "\n\nThis issue asks for an analysis only, so I stop here."
}

func textQuestions(questions string) string {
	return strings.TrimSpace(questions) + "\n\nI need these answers before I can plan. Reply in this thread: a reply from someone with write access to the project starts the analysis again, with everything said here."
}

func textPlanValidated(by string) string {
	return fmt.Sprintf("Plan validated by %s. Starting the development.", mention(by))
}

// TextStatusRestored says the status label is the bot's, and lists the
// command labels.
func TextStatusRestored(label string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The status label `%s` is managed by me: I restored it. Use the command labels to steer my work:\n", label)
	for _, d := range commandDefs {
		fmt.Fprintf(&b, "\n- `%s`: %s", d.Command.Label(), strings.ToLower(d.Description[:1])+d.Description[1:])
	}
	return b.String()
}

func textRetry(phase string) string {
	return fmt.Sprintf("Retrying `%s`.", phase)
}

func textRetryEvents(n int) string {
	return fmt.Sprintf("Trying again the %d event(s) I could not process.", n)
}

func textBlocked(phase, why string, attempts int) string {
	return fmt.Sprintf("I'm blocked on `%s` after %d attempt(s): %s\n\nAdd `%s` to try again with the counters reset, or `%s` for exactly one more attempt.",
		phase, attempts, strings.TrimSpace(why), CommandRetry.Label(), CommandRetryOnce.Label())
}

// textHeld says which files of the agent's change were held and why, and
// what a person can do.
func textHeld(phase string, held *state.RunHeld, runURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I did not push the change of `%s`: it breaks a rule of what an agent's change may carry, so it waits for a person.\n\n", phase)
	for _, f := range held.Files {
		fmt.Fprintf(&b, "- `%s` %s\n", strings.ReplaceAll(f.Path, "`", "'"), f.Reason)
	}
	where := "on the run's record"
	if runURL != "" {
		where = "on the [run page](" + runURL + ")"
	}
	fmt.Fprintf(&b, "\nThe whole patch is kept %s. Change the branch yourself, or fix what the rule needs (a project setting, the issue) and add `%s` to run it again.",
		where, CommandRetry.Label())
	return b.String()
}

func textCIBlocked(attempts int) string {
	return fmt.Sprintf("CI is still red after %d fix attempt(s), so I stopped.\n\nAdd `%s` to keep fixing until it is green (up to a hard cap), or `%s` for one more attempt.",
		attempts, CommandRetryUntilGreen.Label(), CommandRetryOnce.Label())
}

func textConflictBlocked(attempts int, target string) string {
	return fmt.Sprintf("Merging `%s` into this branch still leaves conflicts after %d resolution attempt(s), so I stopped.\n\nResolve them on the branch, or add `%s` for one more attempt (`%s` starts the count again).",
		target, attempts, CommandRetryOnce.Label(), CommandRetry.Label())
}

// TextNothingToResolve is the result of a conflict_resolution run that
// found no conflict left.
func TextNothingToResolve(target string) string {
	return fmt.Sprintf("`%s` now merges into this branch without conflicts: there was nothing to resolve, so I pushed nothing.", target)
}

// TextMergeRequest is the description of the merge request the bot opens.
func TextMergeRequest(iid int64, summary string) string {
	return fmt.Sprintf("%s\n\nCloses #%d", strings.TrimSpace(summary), iid)
}

func mention(login string) string {
	if login == "" {
		return "there"
	}
	return "@" + login
}

// SessionRow is one run in the status comment.
type SessionRow struct {
	Run     state.Run
	Session *state.LLMSession // nil when the run had no llm session yet
	URL     string            // the run page
}

// TextSession renders the managed status comment of a mailbox: the latest
// runs, newest first, with their session facts. A run without a named session
// (API mode, host runner, setting off) shows no session fields.
func TextSession(rows []SessionRow, quarantined []state.QuarantinedEvent) string {
	var b strings.Builder
	for _, q := range quarantined {
		fmt.Fprintf(&b, "> Alfred could not process the event %s: %s; add `%s` to try again.\n\n", eventLabel(q), Clip(q.Error, 400), CommandRetry.Label())
	}
	b.WriteString("**Alfred's runs on this issue**\n\n")
	if len(rows) > 0 && rows[0].URL != "" { // {PublicURL}/runs/{id} gives {PublicURL}/mailboxes/{id}
		fmt.Fprintf(&b, "[All runs, tokens and cost](%s/mailboxes/%s)\n\n", strings.TrimSuffix(rows[0].URL, "/runs/"+rows[0].Run.ID), rows[0].Run.MailboxID)
	}
	b.WriteString("| run | phase | outcome | session | tokens | cost |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		outcome := string(r.Run.Status)
		if r.Run.Status == state.RunQueued || r.Run.Status == state.RunRunning {
			outcome = "in progress" // its page shows its output live
		}
		session, tokens, cost := "—", "—", "—"
		if s := r.Session; s != nil {
			if s.SessionName != nil {
				session = "`" + *s.SessionName + "`"
				if s.NativeSessionID != nil {
					session += " id `" + *s.NativeSessionID + "`"
				}
				session += ", " + r.Run.SessionStart(*s)
			} else if r.Run.NoSession != "" {
				// One cell: a range's "||" must not split the table row.
				session = "none: " + strings.ReplaceAll(r.Run.NoSession, "|", `\|`)
			}
			if s.InputTokens+s.OutputTokens > 0 {
				tokens = fmt.Sprintf("%d in / %d out", s.InputTokens, s.OutputTokens)
			}
			if s.CostUSD > 0 {
				cost = fmt.Sprintf("$%.4f", s.CostUSD)
			}
		}
		link := shortID(r.Run.ID)
		if r.URL != "" {
			link = "[" + link + "](" + r.URL + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", link, r.Run.Phase, outcome, session, tokens, cost)
	}
	return b.String()
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// eventLabel names an event for people: its type and delivery id.
func eventLabel(q state.QuarantinedEvent) string {
	return fmt.Sprintf("%s (delivery %s)", q.Type, q.Delivery)
}

// Clip is the first line of s, cut to n bytes (at a rune's start), as a
// comment or a record quotes a text.
func Clip(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// RunPage is the page of run id under publicURL, "" without one.
func RunPage(publicURL, id string) string {
	if publicURL == "" {
		return ""
	}
	return publicURL + "/runs/" + id
}
