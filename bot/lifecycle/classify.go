package lifecycle

import (
	"slices"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// IntentKind is what an event means for the engine.
type IntentKind string

// Intent kinds, Atlantis-style: each event becomes exactly one typed intent,
// and "not for me" is an intent (Ignore) rather than an error.
const (
	IntentIgnore        IntentKind = "ignore"
	IntentStart         IntentKind = "start"          // the bot was given the issue: acknowledge and analyse
	IntentCommand       IntentKind = "command"        // a command label was added
	IntentRestoreStatus IntentKind = "restore_status" // a person changed the status label
	IntentQuestion      IntentKind = "question"       // a person wrote in the issue thread
	IntentInfo          IntentKind = "info"           // a person answered the analysis' questions
	IntentPlanFeedback  IntentKind = "plan_feedback"  // a person asked the bot to change its plan
	IntentReview        IntentKind = "review"         // review feedback on the bot's merge request
	IntentCI            IntentKind = "ci"             // CI state of the merge request may have changed
	IntentMerged        IntentKind = "merged"         // the merge request was merged
	IntentClosed        IntentKind = "closed"         // the issue or merge request was closed without merge
	IntentBranchDeleted IntentKind = "branch_deleted" // the issue branch is gone
)

// intents are the intent kinds but Ignore, and whether only people with
// write access may cause each: the engine checks the actor's access, and
// reads back what the event claims, before it acts on one that steers.
var intents = []intentDef{
	{IntentStart, true}, {IntentCommand, true}, {IntentRestoreStatus, false}, {IntentQuestion, true},
	{IntentInfo, true}, {IntentPlanFeedback, true}, {IntentReview, true}, {IntentCI, false},
	{IntentMerged, false}, {IntentClosed, false}, {IntentBranchDeleted, false},
}

// Steers tells the intents only people with write access may cause.
func Steers(k IntentKind) bool {
	i := slices.IndexFunc(intents, func(d intentDef) bool { return d.kind == k })
	return i >= 0 && intents[i].steers
}

type intentDef struct {
	kind   IntentKind
	steers bool
}

// Intent is one event, understood.
type Intent struct {
	Kind    IntentKind
	Reason  string   // why it is ignored
	Command Command  // IntentCommand
	Labels  []string // the label set the event reports
	Text    string   // IntentQuestion, IntentReview: what the person wrote
}

func ignore(reason string) Intent { return Intent{Kind: IntentIgnore, Reason: reason} }

// Classify tells what ev means for mailbox mb (nil when the bot keeps none yet
// for the event's target). me is the bot's login. It reads nothing but its
// arguments; who may steer (write access) is checked afterwards, by the engine,
// only for intents that steer.
func Classify(ev *forges.Event, mb *state.Mailbox, me string) Intent {
	if ev.Type == forges.EventIgnored {
		return ignore(ev.Reason)
	}
	if strings.EqualFold(ev.Actor, me) {
		return ignore("the bot's own event")
	}
	if mb == nil || notStarted(mb) && ev.Type != forges.EventIssueLabeled && ev.Type != forges.EventIssueUnlabeled {
		// No mailbox, or one that holds only the quarantined first event
		// of the issue (quarantine): not started yet; its labels are read
		// for a command (ai::retry).
		return classifyNew(ev, me)
	}
	if Status(mb.Status) == StatusDone {
		return ignore("the mailbox is done")
	}
	switch ev.Type {
	case forges.EventIssueAssigned:
		return ignore("already working on it")
	case forges.EventIssueLabeled, forges.EventIssueUnlabeled:
		return classifyLabels(ev, mb)
	case forges.EventCommentCreated:
		return classifyComment(ev, mb, me)
	case forges.EventReviewSubmitted:
		if ev.Review == nil || ev.Review.State == "approved" && strings.TrimSpace(ev.Review.Body) == "" && len(ev.Review.Comments) == 0 {
			return ignore("an approval without comments")
		}
		return Intent{Kind: IntentReview, Text: reviewText(ev.Review)}
	case forges.EventCIStatusChanged, forges.EventMergeRequestUpdated:
		return Intent{Kind: IntentCI}
	case forges.EventMergeRequestMerged:
		return Intent{Kind: IntentMerged}
	case forges.EventIssueClosed, forges.EventMergeRequestClosed:
		return Intent{Kind: IntentClosed}
	case forges.EventBranchDeleted:
		if mb.BranchName != "" && ev.Branch == mb.BranchName {
			return Intent{Kind: IntentBranchDeleted}
		}
		return ignore("not the issue branch")
	}
	return ignore("nothing to do for " + string(ev.Type))
}

// classifyNew is an event for which the bot keeps no mailbox yet: an issue
// assigned to the bot, or a merge request it did not open that someone asks
// it about (a mailbox of kind mr, and an answer).
func classifyNew(ev *forges.Event, me string) Intent {
	switch {
	case ev.Target.Kind == forges.TargetIssue && assignedToMe(ev, me):
		return Intent{Kind: IntentStart, Labels: LabelsOf(ev)}
	case ev.Target.Kind == forges.TargetMergeRequest && ev.Type == forges.EventCommentCreated && Mentions(ev.Comment, me):
		return Intent{Kind: IntentStart, Text: ev.Comment.Body}
	}
	return ignore("no mailbox for " + string(ev.Target.Kind) + " and the bot is not assigned")
}

// classifyComment is a person's comment: review feedback on a merge
// request, answers to the analysis' questions, a request for another plan,
// or a question.
func classifyComment(ev *forges.Event, mb *state.Mailbox, me string) Intent {
	if ev.Comment == nil || strings.TrimSpace(ev.Comment.Body) == "" {
		return ignore("empty comment")
	}
	if _, _, managed := forges.ParseMarker(ev.Comment.Body); managed {
		return ignore("a managed comment")
	}
	if mb.Kind == state.KindMR || ev.Target.Kind == forges.TargetMergeRequest {
		return Intent{Kind: IntentReview, Text: ev.Comment.Body}
	}
	switch Status(mb.Status) {
	case StatusWaitingInfo:
		return Intent{Kind: IntentInfo, Text: ev.Comment.Body}
	case StatusWaitingValidation:
		// People may discuss the plan among themselves (the development
		// run reads the thread); naming the bot asks it for a new plan.
		if Mentions(ev.Comment, me) {
			return Intent{Kind: IntentPlanFeedback, Text: ev.Comment.Body}
		}
	}
	return Intent{Kind: IntentQuestion, Text: ev.Comment.Body}
}

// Mentions tells whether a comment names the bot (@login).
func Mentions(c *forges.Comment, me string) bool {
	return c != nil && me != "" && strings.Contains(strings.ToLower(c.Body), "@"+strings.ToLower(me))
}

func assignedToMe(ev *forges.Event, me string) bool {
	switch ev.Type {
	case forges.EventIssueAssigned:
		if strings.EqualFold(ev.Assignee, me) {
			return true
		}
		fallthrough
	case forges.EventIssueOpened:
		if ev.Issue != nil {
			for _, a := range ev.Issue.Assignees {
				if strings.EqualFold(a, me) {
					return true
				}
			}
		}
	}
	return false
}

// LabelsOf is the label set an event reports, or its issue's.
func LabelsOf(ev *forges.Event) []string {
	if ev.Labels != nil {
		return ev.Labels
	}
	if ev.Issue != nil {
		return ev.Issue.Labels
	}
	return nil
}

// notStarted tells a mailbox that holds only the quarantined first event of
// its issue: no status yet.
func notStarted(mb *state.Mailbox) bool { return mb.Kind == state.KindIssue && mb.Status == "" }

// classifyLabels diffs the reported label set against the one the mailbox saw
// last (Forgejo says only that labels changed). A command label wins over a
// status label change in the same event.
func classifyLabels(ev *forges.Event, mb *state.Mailbox) Intent {
	now := LabelsOf(ev)
	newLabels := added(mb.Labels, now)
	if ev.LabelDeltaKnown {
		newLabels = ev.LabelsAdded
	}
	for _, c := range Commands() {
		if slices.Contains(newLabels, c.Label()) {
			return Intent{Kind: IntentCommand, Command: c, Labels: now}
		}
	}
	if mb.Status != "" {
		if s := StatusLabels(now); len(s) != 1 || !isStatus(s[0], Status(mb.Status)) {
			return Intent{Kind: IntentRestoreStatus, Labels: now}
		}
	}
	return Intent{Kind: IntentIgnore, Reason: "no command or status label changed", Labels: now}
}

// StatusLabels are the status labels among labels, of either form
// ("status::x", "status/x").
func StatusLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if _, ok := forges.StatusOf(l); ok {
			out = append(out, l)
		}
	}
	return out
}

// isStatus tells whether label is the label of status s, in either form.
func isStatus(label string, s Status) bool {
	got, ok := forges.StatusOf(label)
	return ok && got == string(s)
}

// added lists the labels of after that before lacks.
func added(before, after []string) []string {
	var out []string
	for _, l := range after {
		if !slices.Contains(before, l) {
			out = append(out, l)
		}
	}
	return out
}

func reviewText(r *forges.Review) string {
	var b strings.Builder
	if s := strings.TrimSpace(r.Body); s != "" {
		b.WriteString(s)
		b.WriteString("\n")
	}
	for _, c := range r.Comments {
		if c.Path != "" {
			b.WriteString("- " + c.Path)
			if c.Line > 0 {
				b.WriteString(":" + strconv.Itoa(c.Line))
			}
			b.WriteString(": ")
		} else {
			b.WriteString("- ")
		}
		b.WriteString(strings.TrimSpace(c.Body))
		b.WriteString("\n")
	}
	return b.String()
}
