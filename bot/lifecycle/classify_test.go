package lifecycle

import (
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

func TestClassify(t *testing.T) {
	issue := forges.Target{Kind: forges.TargetIssue, Number: 7}
	mrTarget := forges.Target{Kind: forges.TargetMergeRequest, Number: 9}
	waiting := &state.Mailbox{Kind: state.KindIssue, Status: string(StatusWaitingValidation), BranchName: "agent/issue-7-x",
		Labels: []string{"status::waiting_validation", "type::task"}}
	done := &state.Mailbox{Kind: state.KindIssue, Status: string(StatusDone)}
	waitingInfo := &state.Mailbox{Kind: state.KindIssue, Status: string(StatusWaitingInfo)}
	tests := []struct {
		name    string
		ev      forges.Event
		mb      *state.Mailbox
		want    IntentKind
		command Command
	}{
		{"ignored delivery", forges.Event{Type: forges.EventIgnored, Reason: "ping"}, nil, IntentIgnore, ""},
		{"assigned to the bot", forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: issue}, nil, IntentStart, ""},
		{"assigned to the bot, other case", forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "Alfred", Target: issue}, nil, IntentStart, ""},
		{"opened already assigned", forges.Event{Type: forges.EventIssueOpened, Actor: "alice", Target: issue,
			Issue: &forges.Issue{Assignees: []string{"bob", "alfred"}}}, nil, IntentStart, ""},
		{"assigned to someone else", forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "bob", Target: issue,
			Issue: &forges.Issue{Assignees: []string{"bob"}}}, nil, IntentIgnore, ""},
		{"the bot's own event", forges.Event{Type: forges.EventIssueAssigned, Actor: "alfred", Assignee: "alfred", Target: issue}, nil, IntentIgnore, ""},
		{"comment without mailbox", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: issue,
			Comment: &forges.Comment{Body: "hi"}}, nil, IntentIgnore, ""},
		{"validate plan added (delta known)", forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, LabelDeltaKnown: true,
			LabelsAdded: []string{"ai::validate_plan"}, Labels: []string{"status::waiting_validation", "type::task", "ai::validate_plan"}},
			waiting, IntentCommand, CommandValidatePlan},
		{"retry added (Forgejo: no delta)", forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue,
			Labels: []string{"status::waiting_validation", "type::task", "ai::retry"}}, waiting, IntentCommand, CommandRetry},
		{"status label swapped by a person", forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue,
			Labels: []string{"status::in_ci", "type::task"}}, waiting, IntentRestoreStatus, ""},
		{"second status label added", forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue,
			Labels: []string{"status::waiting_validation", "status::done", "type::task"}}, waiting, IntentRestoreStatus, ""},
		{"status label removed", forges.Event{Type: forges.EventIssueUnlabeled, Actor: "alice", Target: issue, LabelDeltaKnown: true,
			LabelsRemoved: []string{"status::waiting_validation"}, Labels: []string{"type::task"}}, waiting, IntentRestoreStatus, ""},
		{"unrelated label", forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue,
			Labels: []string{"status::waiting_validation", "type::task", "priority::high"}}, waiting, IntentIgnore, ""},
		{"question in the thread", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: issue,
			Comment: &forges.Comment{Body: "Why this approach?"}}, waiting, IntentQuestion, ""},
		{"plan feedback naming the bot", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: issue,
			Comment: &forges.Comment{Body: "@Alfred please reuse the logger"}}, waiting, IntentPlanFeedback, ""},
		{"answer to the analysis' questions", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: issue,
			Comment: &forges.Comment{Body: "Only English."}}, waitingInfo, IntentInfo, ""},
		{"a managed comment quoted by someone", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: issue,
			Comment: &forges.Comment{Body: "x <!-- agent:key=0123456789ab:kind=plan -->"}}, waiting, IntentIgnore, ""},
		{"review comment on the merge request", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: mrTarget,
			Comment: &forges.Comment{Body: "rename this"}}, waiting, IntentReview, ""},
		{"review with comments", forges.Event{Type: forges.EventReviewSubmitted, Actor: "alice", Target: mrTarget,
			Review: &forges.Review{State: "changes_requested", Comments: []forges.ReviewComment{{Path: "a.go", Line: 3, Body: "nil check"}}}}, waiting, IntentReview, ""},
		{"bare approval", forges.Event{Type: forges.EventReviewSubmitted, Actor: "alice", Target: mrTarget,
			Review: &forges.Review{State: "approved"}}, waiting, IntentIgnore, ""},
		{"ci changed", forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: "abc"}, waiting, IntentCI, ""},
		{"merged", forges.Event{Type: forges.EventMergeRequestMerged, Actor: "alice", Target: mrTarget}, waiting, IntentMerged, ""},
		{"issue closed", forges.Event{Type: forges.EventIssueClosed, Actor: "alice", Target: issue}, waiting, IntentClosed, ""},
		{"issue branch deleted", forges.Event{Type: forges.EventBranchDeleted, Actor: "alice", Branch: "agent/issue-7-x"}, waiting, IntentBranchDeleted, ""},
		{"another branch deleted", forges.Event{Type: forges.EventBranchDeleted, Actor: "alice", Branch: "main"}, waiting, IntentIgnore, ""},
		{"anything on a done mailbox", forges.Event{Type: forges.EventCommentCreated, Actor: "alice", Target: issue,
			Comment: &forges.Comment{Body: "thanks"}}, done, IntentIgnore, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(&tt.ev, tt.mb, "alfred")
			if got.Kind != tt.want || got.Command != tt.command {
				t.Fatalf("Classify = %+v, want %s %s", got, tt.want, tt.command)
			}
			if got.Kind == IntentIgnore && got.Reason == "" {
				t.Error("an ignored event must say why")
			}
		})
	}
}

func TestFlowOf(t *testing.T) {
	for labels, want := range map[string]Flow{"": FlowTask, "type::bug": FlowTask, "type::analysis": FlowAnalysis, "type::question": FlowQuestion} {
		if got := FlowOf([]string{"status::done", labels}); got != want {
			t.Errorf("FlowOf(%q) = %s, want %s", labels, got, want)
		}
	}
}
