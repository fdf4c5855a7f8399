package forgejo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// Hooks verifies and parses Forgejo and Gitea webhook deliveries.
//
// Verification: lowercase hex HMAC-SHA256 of the raw body in
// X-Forgejo-Signature, or X-Gitea-Signature from Gitea. Parsing keys on
// X-Forgejo-Event-Type (X-Gitea-Event-Type), which names the specific event
// where X-Forgejo-Event is only its family, and on the payload's action.
// Forgejo 7 quirks handled here: label changes arrive as label_updated with
// the resulting labels and no delta; label_cleared still lists the removed
// labels; pushes to a pull request branch are action "synchronized"; reviews
// come as pull_request_review_{approved,rejected,comment} with a thin payload
// (no id, no inline comments: read them with Forge.ReviewComments); a plain
// comment on a pull request is Type pull_request_comment; there is no
// commit-status webhook in 7.x (Gitea's later "status" event is parsed when sent).
type Hooks struct{}

var _ forges.Hooks = Hooks{}

// Verify checks the signature against each secret in constant time.
func (Hooks) Verify(h http.Header, body []byte, secrets []string) error {
	name, sig := "X-Forgejo-Signature", h.Get("X-Forgejo-Signature")
	if sig == "" {
		name, sig = "X-Gitea-Signature", h.Get("X-Gitea-Signature")
	}
	if sig == "" {
		name = "X-Forgejo-Signature or X-Gitea-Signature"
	}
	return forges.VerifyHMACSHA256(name, sig, body, secrets)
}

func header(h http.Header, suffix string) string {
	if v := h.Get("X-Forgejo-" + suffix); v != "" {
		return v
	}
	return h.Get("X-Gitea-" + suffix)
}

// payload is the union of the Forgejo webhook payloads the bot reads.
type payload struct {
	Action      string       `json:"action"`
	Number      int64        `json:"number"`
	Issue       *hookIssue   `json:"issue"`
	PullRequest *hookPull    `json:"pull_request"`
	Comment     *hookComment `json:"comment"`
	IsPull      bool         `json:"is_pull"`
	Review      *struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	} `json:"review"`
	Sender     *hookUser `json:"sender"`
	Repository *struct {
		Name  string    `json:"name"`
		Owner *hookUser `json:"owner"`
	} `json:"repository"`
	// push, create, delete
	Ref     string `json:"ref"`
	RefType string `json:"ref_type"`
	After   string `json:"after"`
	// status (Gitea 1.22+, not sent by Forgejo 7)
	SHA         string `json:"sha"`
	State       string `json:"state"`
	Context     string `json:"context"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

type hookUser struct {
	Login    string `json:"login"`
	UserName string `json:"username"`
	ID       int64  `json:"id"`
}

func (u *hookUser) name() string {
	if u == nil {
		return ""
	}
	if u.Login != "" {
		return u.Login
	}
	return u.UserName
}

type hookLabel struct {
	Name string `json:"name"`
}

type hookIssue struct {
	Number      int64       `json:"number"`
	Title       string      `json:"title"`
	Body        string      `json:"body"`
	State       string      `json:"state"`
	User        *hookUser   `json:"user"`
	Labels      []hookLabel `json:"labels"`
	Assignees   []*hookUser `json:"assignees"`
	HTMLURL     string      `json:"html_url"`
	UpdatedAt   time.Time   `json:"updated_at"`
	PullRequest *struct {
		Merged bool `json:"merged"`
	} `json:"pull_request"`
}

type hookBranch struct {
	Label string `json:"label"`
	Ref   string `json:"ref"`
	SHA   string `json:"sha"`
}

type hookPull struct {
	Number    int64       `json:"number"`
	Title     string      `json:"title"`
	Body      string      `json:"body"`
	State     string      `json:"state"`
	User      *hookUser   `json:"user"`
	Labels    []hookLabel `json:"labels"`
	Assignees []*hookUser `json:"assignees"`
	HTMLURL   string      `json:"html_url"`
	Mergeable bool        `json:"mergeable"`
	Merged    bool        `json:"merged"`
	Head      *hookBranch `json:"head"`
	Base      *hookBranch `json:"base"`
}

type hookComment struct {
	ID        int64     `json:"id"`
	User      *hookUser `json:"user"`
	Body      string    `json:"body"`
	HTMLURL   string    `json:"html_url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func labelNames(ls []hookLabel) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func userNames(us []*hookUser) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		if n := u.name(); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func (i *hookIssue) issue() *forges.Issue {
	return &forges.Issue{Number: i.Number, Title: i.Title, Body: i.Body, State: i.State, Author: i.User.name(),
		Labels: labelNames(i.Labels), Assignees: userNames(i.Assignees), URL: i.HTMLURL, UpdatedAt: i.UpdatedAt}
}

func (p *hookPull) mergeRequest() *forges.MergeRequest {
	mr := &forges.MergeRequest{Number: p.Number, Title: p.Title, Body: p.Body, Author: p.User.name(), URL: p.HTMLURL, Mergeable: forges.MergeableUnknown}
	if p.Head != nil {
		mr.SourceBranch, mr.HeadSHA = headBranch(p.Head.Label, p.Head.Ref), p.Head.SHA
	}
	if p.Base != nil {
		mr.TargetBranch = p.Base.Ref
	}
	switch {
	case p.Merged:
		mr.State = forges.MergeRequestMerged
	case p.State == "closed":
		mr.State = forges.MergeRequestClosed
	default:
		mr.State = forges.MergeRequestOpen
	}
	return mr
}

// Parse normalizes a verified delivery.
func (Hooks) Parse(h http.Header, body []byte) (*forges.Event, error) {
	typ := header(h, "Event-Type")
	if typ == "" {
		typ = header(h, "Event")
	}
	if typ == "" {
		return nil, fmt.Errorf("%w: missing X-Forgejo-Event-Type header", forges.ErrMalformed)
	}
	parse, ok := parsers[typ]
	if !ok { // typed before it is read: unused types have shapes of their own (a wiki's comment is text, a package names no repository)
		return ignoredType(h, typ, body)
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("%w: %s payload: %v", forges.ErrMalformed, typ, err)
	}
	ev := &forges.Event{DeliveryID: header(h, "Delivery"), Actor: p.Sender.name()}
	if p.Repository == nil || p.Repository.Name == "" || p.Repository.Owner.name() == "" {
		return nil, fmt.Errorf("%w: %s payload names no repository", forges.ErrMalformed, typ)
	}
	ev.Target.Project = forges.Project{Owner: p.Repository.Owner.name(), Name: p.Repository.Name}
	return parse(ev, typ, &p)
}

// A parser fills ev, which already has its delivery id, actor and project,
// from the payload p of an event of type typ.
type parser func(ev *forges.Event, typ string, p *payload) (*forges.Event, error)

// parsers maps the event types the bot follows to their parsers; every
// other type is ignored.
var parsers = map[string]parser{
	"issues":       parseIssue,
	"issue_assign": parseIssue,
	"issue_label":  parseIssue,

	"pull_request":                 parsePull,
	"pull_request_sync":            parsePull,
	"pull_request_label":           parsePull,
	"pull_request_assign":          parsePull,
	"pull_request_review_approved": parsePull,
	"pull_request_review_rejected": parsePull,
	"pull_request_review_comment":  parsePull,
	"pull_request_review_request":  parsePull,
	"pull_request_milestone":       parsePull,

	"issue_comment":        parseComment,
	"pull_request_comment": parseComment,

	"push":   parsePush,
	"delete": parseDelete,
	"status": parseStatus,
}

// ignored makes ev an ignored event, for reason.
func ignored(ev *forges.Event, reason string) (*forges.Event, error) {
	ev.Type, ev.Reason = forges.EventIgnored, reason
	return ev, nil
}

// ignoredType is an event of a type Alfred does not use, read only for who
// sent it and, when it names one, its repository.
func ignoredType(h http.Header, typ string, body []byte) (*forges.Event, error) {
	var p struct {
		Sender     *hookUser `json:"sender"`
		Repository *struct {
			Name  string    `json:"name"`
			Owner *hookUser `json:"owner"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("%w: %s payload: %v", forges.ErrMalformed, typ, err)
	}
	ev := &forges.Event{DeliveryID: header(h, "Delivery"), Actor: p.Sender.name()}
	if p.Repository != nil {
		ev.Target.Project = forges.Project{Owner: p.Repository.Owner.name(), Name: p.Repository.Name}
	}
	return ignored(ev, "event "+typ+" is not used")
}

// lacks is the error of a typ payload that lacks what.
func lacks(typ string, p *payload, what string) error {
	return fmt.Errorf("%w: %s/%s payload has no %s", forges.ErrMalformed, typ, p.Action, what)
}

// parseIssue parses an issue event; the issue of a pull request targets the
// merge request.
func parseIssue(ev *forges.Event, typ string, p *payload) (*forges.Event, error) {
	if p.Issue == nil {
		return nil, lacks(typ, p, "issue")
	}
	ev.Issue = p.Issue.issue()
	ev.Target.Kind, ev.Target.Number = forges.TargetIssue, p.Issue.Number
	if p.Issue.PullRequest != nil {
		ev.Target.Kind = forges.TargetMergeRequest
	}
	return issueAction(ev, typ, p.Action, ev.Issue.Labels, ev.Issue.Assignees)
}

// parsePull parses a pull request event, reviews included.
func parsePull(ev *forges.Event, typ string, p *payload) (*forges.Event, error) {
	if p.PullRequest == nil {
		return nil, lacks(typ, p, "pull_request")
	}
	ev.MergeRequest = p.PullRequest.mergeRequest()
	ev.Target.Kind, ev.Target.Number = forges.TargetMergeRequest, p.PullRequest.Number
	ev.SHA = ev.MergeRequest.HeadSHA
	ev.Branch = ev.MergeRequest.SourceBranch
	return pullAction(ev, typ, p)
}

// parseComment parses a comment created or edited on an issue or a pull
// request.
func parseComment(ev *forges.Event, typ string, p *payload) (*forges.Event, error) {
	if p.Issue == nil || p.Comment == nil {
		return nil, lacks(typ, p, "issue and comment")
	}
	ev.Issue = p.Issue.issue()
	ev.Target.Kind, ev.Target.Number = forges.TargetIssue, p.Issue.Number
	if p.IsPull || p.Issue.PullRequest != nil || typ == "pull_request_comment" {
		ev.Target.Kind = forges.TargetMergeRequest
	}
	ev.Comment = &forges.Comment{ID: p.Comment.ID, Author: p.Comment.User.name(), Body: p.Comment.Body,
		URL: p.Comment.HTMLURL, CreatedAt: p.Comment.CreatedAt, UpdatedAt: p.Comment.UpdatedAt}
	switch p.Action {
	case "created":
		ev.Type = forges.EventCommentCreated
	case "edited":
		ev.Type = forges.EventCommentEdited
	default:
		return ignored(ev, "comment "+p.Action+" is not used")
	}
	return ev, nil
}

// parsePush parses a push to a branch; a push of the zero commit deletes
// the branch.
func parsePush(ev *forges.Event, _ string, p *payload) (*forges.Event, error) {
	branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
	if !ok {
		return ignored(ev, "push to "+p.Ref+" is not a branch")
	}
	ev.Type, ev.Branch, ev.SHA = forges.EventPush, branch, p.After
	if strings.Trim(p.After, "0") == "" {
		ev.Type = forges.EventBranchDeleted
	}
	return ev, nil
}

// parseDelete parses the deletion of a branch.
func parseDelete(ev *forges.Event, _ string, p *payload) (*forges.Event, error) {
	if p.RefType != "branch" {
		return ignored(ev, "deleted "+p.RefType+" is not a branch")
	}
	ev.Type, ev.Branch = forges.EventBranchDeleted, strings.TrimPrefix(p.Ref, "refs/heads/")
	return ev, nil
}

// parseStatus parses a commit status (Gitea 1.22+).
func parseStatus(ev *forges.Event, typ string, p *payload) (*forges.Event, error) {
	st, ok := ciState(p.State)
	if p.SHA == "" || !ok {
		return nil, lacks(typ, p, "sha and known state")
	}
	ev.Type, ev.SHA = forges.EventCIStatusChanged, p.SHA
	ev.CI = &forges.Check{Name: p.Context, State: st, Description: p.Description, URL: p.TargetURL}
	return ev, nil
}

// issueAction sets the type of an issue event (or of the label and assignee
// events of a pull request) from its action.
func issueAction(ev *forges.Event, typ, action string, labels, assignees []string) (*forges.Event, error) {
	switch action {
	case "opened":
		ev.Type = forges.EventIssueOpened
	case "edited":
		ev.Type = forges.EventIssueEdited
	case "closed":
		ev.Type = forges.EventIssueClosed
	case "reopened":
		ev.Type = forges.EventIssueReopened
	case "assigned":
		// The payload does not say who was assigned; with one assignee it is clear.
		ev.Type = forges.EventIssueAssigned
		if len(assignees) == 1 {
			ev.Assignee = assignees[0]
		}
	case "unassigned":
		ev.Type = forges.EventIssueUnassigned
	case "label_updated":
		// Added or removed: Forgejo does not say; the engine diffs Labels.
		ev.Type, ev.Labels = forges.EventIssueLabeled, labels
	case "label_cleared":
		// issue.labels still lists the labels just removed.
		ev.Type, ev.Labels, ev.LabelsRemoved, ev.LabelDeltaKnown = forges.EventIssueUnlabeled, []string{}, labels, true
	default:
		return ignored(ev, typ+" "+action+" is not used")
	}
	return ev, nil
}

// pullAction sets the type of a pull request event from its type and action.
func pullAction(ev *forges.Event, typ string, p *payload) (*forges.Event, error) {
	mr := ev.MergeRequest
	switch typ {
	case "pull_request":
		switch p.Action {
		case "opened", "reopened": // as GitHub and GitLab have it
			ev.Type = forges.EventMergeRequestOpened
		case "closed":
			ev.Type = forges.EventMergeRequestClosed
			if mr.State == forges.MergeRequestMerged {
				ev.Type = forges.EventMergeRequestMerged
			}
		default:
			return ignored(ev, "pull request "+p.Action+" is not used")
		}
	case "pull_request_sync":
		if p.Action != "synchronized" {
			return ignored(ev, "pull request sync "+p.Action+" is not used")
		}
		ev.Type = forges.EventMergeRequestUpdated
	case "pull_request_label":
		return issueAction(ev, typ, p.Action, labelNames(p.PullRequest.Labels), nil)
	case "pull_request_assign":
		return issueAction(ev, typ, p.Action, nil, userNames(p.PullRequest.Assignees))
	case "pull_request_review_approved", "pull_request_review_rejected", "pull_request_review_comment":
		if p.Review == nil {
			return nil, fmt.Errorf("%w: %s payload has no review", forges.ErrMalformed, typ)
		}
		state := map[string]string{
			"pull_request_review_approved": "approved",
			"pull_request_review_rejected": "changes_requested",
			"pull_request_review_comment":  "commented",
		}[typ]
		ev.Type = forges.EventReviewSubmitted
		ev.Review = &forges.Review{State: state, Body: p.Review.Content}
	default:
		return ignored(ev, typ+" "+p.Action+" is not used")
	}
	return ev, nil
}
