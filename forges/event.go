package forges

// EventType is the normalized kind of a webhook delivery.
type EventType string

// Normalized event types. A delivery the bot has no use for parses to
// EventIgnored with a Reason; it is not an error.
const (
	EventIgnored EventType = "ignored"

	EventIssueOpened     EventType = "issue_opened"
	EventIssueEdited     EventType = "issue_edited"
	EventIssueClosed     EventType = "issue_closed"
	EventIssueReopened   EventType = "issue_reopened"
	EventIssueAssigned   EventType = "issue_assigned"
	EventIssueUnassigned EventType = "issue_unassigned"
	// EventIssueLabeled and EventIssueUnlabeled carry the full label set after
	// the change in Labels. Forgejo/Gitea send "label_updated" without saying
	// what changed: it parses to EventIssueLabeled with LabelDeltaKnown false,
	// and the engine diffs Labels against what it saw last.
	EventIssueLabeled   EventType = "issue_labeled"
	EventIssueUnlabeled EventType = "issue_unlabeled"

	// Comment events are for issue and merge request threads alike; Target.Kind tells.
	EventCommentCreated EventType = "comment_created"
	EventCommentEdited  EventType = "comment_edited"

	EventMergeRequestOpened  EventType = "mr_opened"
	EventMergeRequestUpdated EventType = "mr_updated" // new commits on the source branch
	EventMergeRequestMerged  EventType = "mr_merged"
	EventMergeRequestClosed  EventType = "mr_closed" // closed without merging

	EventReviewSubmitted EventType = "review_submitted"
	EventCIStatusChanged EventType = "ci_status_changed"
	EventBranchDeleted   EventType = "branch_deleted"
	EventPush            EventType = "push"
)

// Event is one webhook delivery, verified and normalized. Only the fields that
// make sense for Type are set.
type Event struct {
	Type EventType `json:"type"`
	// Reason says why an EventIgnored delivery was ignored.
	Reason string `json:"reason,omitempty"`
	// DeliveryID is the forge's id of the delivery (X-Gitea-Delivery,
	// X-GitHub-Delivery, X-Gitlab-Event-UUID); a redelivery repeats it.
	DeliveryID string `json:"delivery_id"`
	// Actor is the login of whoever caused the event.
	Actor string `json:"actor"`
	// Target is the issue or merge request the event is about (Number 0 for
	// push, branch and CI events that name no merge request).
	Target Target `json:"target"`

	Issue        *Issue        `json:"issue,omitempty"`
	MergeRequest *MergeRequest `json:"merge_request,omitempty"`
	Comment      *Comment      `json:"comment,omitempty"`
	Review       *Review       `json:"review,omitempty"`

	// Labels is the full label set of the target after a label event.
	Labels []string `json:"labels,omitempty"`
	// LabelsAdded and LabelsRemoved say what changed, when LabelDeltaKnown.
	LabelsAdded     []string `json:"labels_added,omitempty"`
	LabelsRemoved   []string `json:"labels_removed,omitempty"`
	LabelDeltaKnown bool     `json:"label_delta_known,omitempty"`
	// Assignee is who was assigned or unassigned.
	Assignee string `json:"assignee,omitempty"`

	// Branch and SHA are set for push, branch deletion and CI events.
	Branch string `json:"branch,omitempty"`
	SHA    string `json:"sha,omitempty"`
	// CI is the state a CI event reports for SHA.
	CI *Check `json:"ci,omitempty"`
}

// Review is a submitted merge request review with its comments.
type Review struct {
	ID       int64           `json:"id"`
	State    string          `json:"state"` // "approved", "changes_requested" or "commented"
	Body     string          `json:"body"`
	Comments []ReviewComment `json:"comments,omitempty"`
}
