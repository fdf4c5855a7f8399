package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

// Webhook headers GitHub sends with each delivery.
const (
	headerSignature = "X-Hub-Signature-256"
	headerEvent     = "X-GitHub-Event"
	headerDelivery  = "X-GitHub-Delivery"
)

// Hooks verifies and parses GitHub webhook deliveries.
type Hooks struct{}

var _ forges.Hooks = Hooks{}

// Verify checks X-Hub-Signature-256 ("sha256=" and the hex HMAC-SHA256 of the
// body) against each secret in constant time.
func (Hooks) Verify(h http.Header, body []byte, secrets []string) error {
	sig := h.Get(headerSignature)
	if sig == "" {
		return fmt.Errorf("%w: missing %s header", forges.ErrBadSignature, headerSignature)
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return fmt.Errorf("%w: %s lacks the sha256= prefix", forges.ErrBadSignature, headerSignature)
	}
	return forges.VerifyHMACSHA256(headerSignature, hexSig, body, secrets)
}

// Parse turns a verified delivery into a normalized event. What the bot reads
// from GitHub:
//
//	issues               opened, edited, closed, reopened, assigned, unassigned, labeled, unlabeled
//	issue_comment        created, edited (Target.Kind mr when the issue is a pull request)
//	pull_request         opened and reopened (mr_opened), synchronize (mr_updated),
//	                     closed (mr_merged or mr_closed), labeled and unlabeled (label
//	                     events with Target.Kind mr)
//	pull_request_review  submitted: review_submitted with the review's state and body.
//	                     Its inline comments are not in the payload: read them with
//	                     Forge.ReviewComments.
//	status               ci_status_changed for the commit
//	check_run, check_suite  completed: ci_status_changed for the head commit
//	delete               a branch: branch_deleted
//	push                 to a branch: push; with deleted true: branch_deleted
//
// pull_request_review_comment is ignored: GitHub attaches every review comment,
// single ones and replies included, to a review and sends pull_request_review
// submitted for it, so handling both would act twice on one review. Any other
// event or action is EventIgnored with the reason.
func (Hooks) Parse(h http.Header, body []byte) (*forges.Event, error) {
	name := h.Get(headerEvent)
	if name == "" {
		return nil, fmt.Errorf("%w: missing %s header", forges.ErrMalformed, headerEvent)
	}
	var head struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, fmt.Errorf("%w: %s body: %v", forges.ErrMalformed, name, err)
	}
	ev, err := parse(name, head.Action, body)
	if err != nil {
		return nil, err
	}
	ev.DeliveryID = h.Get(headerDelivery)
	return ev, nil
}

func parse(name, action string, body []byte) (*forges.Event, error) {
	switch name {
	case "issues":
		return parseIssues(action, body)
	case "issue_comment":
		return parseIssueComment(action, body)
	case "pull_request":
		return parsePullRequest(action, body)
	case "pull_request_review":
		return parseReview(action, body)
	case "pull_request_review_comment":
		return ignored("pull_request_review_comment %s: review comments are read with their review (pull_request_review submitted)", action), nil
	case "status":
		return parseStatus(body)
	case "check_run":
		return parseCheckRun(action, body)
	case "check_suite":
		return parseCheckSuite(action, body)
	case "delete":
		return parseDelete(body)
	case "push":
		return parsePush(body)
	}
	return ignored("event %s is not used", name), nil
}

func ignored(format string, args ...any) *forges.Event {
	return &forges.Event{Type: forges.EventIgnored, Reason: fmt.Sprintf(format, args...)}
}

// decode unmarshals body into v, answering ErrMalformed.
func decode(name string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s body: %v", forges.ErrMalformed, name, err)
	}
	return nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", forges.ErrMalformed, fmt.Sprintf(format, args...))
}

// project reads the repository an event is about.
func project(name string, r *gh.Repository) (forges.Project, error) {
	if r.GetOwner().GetLogin() == "" || r.GetName() == "" {
		return forges.Project{}, malformed("%s: no repository owner and name", name)
	}
	return forges.Project{Owner: r.GetOwner().GetLogin(), Name: r.GetName()}, nil
}

var issueActions = map[string]forges.EventType{
	"opened":     forges.EventIssueOpened,
	"edited":     forges.EventIssueEdited,
	"closed":     forges.EventIssueClosed,
	"reopened":   forges.EventIssueReopened,
	"assigned":   forges.EventIssueAssigned,
	"unassigned": forges.EventIssueUnassigned,
	"labeled":    forges.EventIssueLabeled,
	"unlabeled":  forges.EventIssueUnlabeled,
}

func parseIssues(action string, body []byte) (*forges.Event, error) {
	typ, ok := issueActions[action]
	if !ok {
		return ignored("issues %s is not used", action), nil
	}
	var p gh.IssuesEvent
	if err := decode("issues", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("issues", p.Repo)
	if err != nil {
		return nil, err
	}
	if p.GetIssue().GetNumber() <= 0 {
		return nil, malformed("issues %s: no issue number", action)
	}
	is := toIssue(p.Issue)
	ev := &forges.Event{
		Type:   typ,
		Actor:  p.GetSender().GetLogin(),
		Target: forges.Target{Project: proj, Kind: forges.TargetIssue, Number: is.Number},
		Issue:  is,
	}
	switch typ {
	case forges.EventIssueAssigned, forges.EventIssueUnassigned:
		ev.Assignee = p.GetAssignee().GetLogin()
		if ev.Assignee == "" {
			return nil, malformed("issues %s: no assignee", action)
		}
	case forges.EventIssueLabeled, forges.EventIssueUnlabeled:
		if err := setLabelDelta(ev, action, p.Label, is.Labels); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// setLabelDelta fills the label fields of a labeled or unlabeled event.
func setLabelDelta(ev *forges.Event, action string, l *gh.Label, after []string) error {
	if l.GetName() == "" {
		return malformed("%s: no label", action)
	}
	ev.Labels = after
	ev.LabelDeltaKnown = true
	if action == "labeled" {
		ev.LabelsAdded = []string{l.GetName()}
	} else {
		ev.LabelsRemoved = []string{l.GetName()}
	}
	return nil
}

func parseIssueComment(action string, body []byte) (*forges.Event, error) {
	var typ forges.EventType
	switch action {
	case "created":
		typ = forges.EventCommentCreated
	case "edited":
		typ = forges.EventCommentEdited
	default:
		return ignored("issue_comment %s is not used", action), nil
	}
	var p gh.IssueCommentEvent
	if err := decode("issue_comment", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("issue_comment", p.Repo)
	if err != nil {
		return nil, err
	}
	if p.GetIssue().GetNumber() <= 0 || p.GetComment().GetID() == 0 {
		return nil, malformed("issue_comment %s: no issue number or comment id", action)
	}
	kind := forges.TargetIssue
	if p.Issue.IsPullRequest() {
		kind = forges.TargetMergeRequest
	}
	c := toComment(p.Comment)
	return &forges.Event{
		Type:    typ,
		Actor:   p.GetSender().GetLogin(),
		Target:  forges.Target{Project: proj, Kind: kind, Number: int64(p.Issue.GetNumber())},
		Issue:   toIssue(p.Issue), // a pull request's issue side when Kind is mr
		Comment: &c,
	}, nil
}

func parsePullRequest(action string, body []byte) (*forges.Event, error) {
	switch action {
	case "opened", "reopened", "synchronize", "closed", "labeled", "unlabeled":
	default:
		return ignored("pull_request %s is not used", action), nil
	}
	var p gh.PullRequestEvent
	if err := decode("pull_request", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("pull_request", p.Repo)
	if err != nil {
		return nil, err
	}
	if p.GetPullRequest().GetNumber() <= 0 {
		return nil, malformed("pull_request %s: no pull request number", action)
	}
	mr := toMergeRequest(p.PullRequest)
	mr.MergedBy = "" // an event names its actor (forges.MergeRequest.MergedBy)
	ev := &forges.Event{
		Actor:        p.GetSender().GetLogin(),
		Target:       forges.Target{Project: proj, Kind: forges.TargetMergeRequest, Number: mr.Number},
		MergeRequest: mr,
	}
	switch action {
	case "opened", "reopened":
		ev.Type = forges.EventMergeRequestOpened
	case "synchronize":
		ev.Type = forges.EventMergeRequestUpdated
		ev.Branch, ev.SHA = mr.SourceBranch, mr.HeadSHA
	case "closed":
		ev.Type = forges.EventMergeRequestClosed
		if mr.State == forges.MergeRequestMerged {
			ev.Type = forges.EventMergeRequestMerged
		}
	case "labeled", "unlabeled":
		ev.Type = forges.EventIssueLabeled
		if action == "unlabeled" {
			ev.Type = forges.EventIssueUnlabeled
		}
		if err := setLabelDelta(ev, action, p.Label, labelNames(p.PullRequest.Labels)); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

func parseReview(action string, body []byte) (*forges.Event, error) {
	if action != "submitted" {
		return ignored("pull_request_review %s is not used", action), nil
	}
	var p gh.PullRequestReviewEvent
	if err := decode("pull_request_review", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("pull_request_review", p.Repo)
	if err != nil {
		return nil, err
	}
	if p.GetPullRequest().GetNumber() <= 0 || p.GetReview().GetID() == 0 {
		return nil, malformed("pull_request_review %s: no pull request number or review id", action)
	}
	mr := toMergeRequest(p.PullRequest)
	mr.MergedBy = ""
	return &forges.Event{
		Type:         forges.EventReviewSubmitted,
		Actor:        p.GetSender().GetLogin(),
		Target:       forges.Target{Project: proj, Kind: forges.TargetMergeRequest, Number: mr.Number},
		MergeRequest: mr,
		Review: &forges.Review{
			ID:    p.Review.GetID(),
			State: strings.ToLower(p.Review.GetState()), // APPROVED, CHANGES_REQUESTED, COMMENTED
			Body:  p.Review.GetBody(),
		},
	}, nil
}

func parseStatus(body []byte) (*forges.Event, error) {
	var p gh.StatusEvent
	if err := decode("status", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("status", p.Repo)
	if err != nil {
		return nil, err
	}
	if p.GetSHA() == "" {
		return nil, malformed("status: no sha")
	}
	return &forges.Event{
		Type:   forges.EventCIStatusChanged,
		Actor:  p.GetSender().GetLogin(),
		Target: forges.Target{Project: proj},
		SHA:    p.GetSHA(),
		CI: &forges.Check{
			Name:        p.GetContext(),
			State:       statusState(p.GetState()),
			Description: p.GetDescription(),
			URL:         p.GetTargetURL(),
		},
	}, nil
}

func parseCheckRun(action string, body []byte) (*forges.Event, error) {
	if action != "completed" {
		return ignored("check_run %s is not used: only completed runs change the CI state", action), nil
	}
	var p gh.CheckRunEvent
	if err := decode("check_run", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("check_run", p.Repo)
	if err != nil {
		return nil, err
	}
	r := p.GetCheckRun()
	if r.GetHeadSHA() == "" {
		return nil, malformed("check_run %s: no head_sha", action)
	}
	ev := &forges.Event{
		Type:   forges.EventCIStatusChanged,
		Actor:  p.GetSender().GetLogin(),
		Target: forges.Target{Project: proj},
		Branch: r.GetCheckSuite().GetHeadBranch(),
		SHA:    r.GetHeadSHA(),
		CI: &forges.Check{
			Name:        r.GetName(),
			State:       checkRunState(r.GetStatus(), r.GetConclusion()),
			Description: r.GetOutput().GetTitle(),
			URL:         r.GetHTMLURL(),
		},
	}
	targetPullRequest(ev, p.Repo, r.PullRequests)
	return ev, nil
}

func parseCheckSuite(action string, body []byte) (*forges.Event, error) {
	if action != "completed" {
		return ignored("check_suite %s is not used: only completed suites change the CI state", action), nil
	}
	var p gh.CheckSuiteEvent
	if err := decode("check_suite", body, &p); err != nil {
		return nil, err
	}
	proj, err := project("check_suite", p.Repo)
	if err != nil {
		return nil, err
	}
	s := p.GetCheckSuite()
	if s.GetHeadSHA() == "" {
		return nil, malformed("check_suite %s: no head_sha", action)
	}
	ev := &forges.Event{
		Type:   forges.EventCIStatusChanged,
		Actor:  p.GetSender().GetLogin(),
		Target: forges.Target{Project: proj},
		Branch: s.GetHeadBranch(),
		SHA:    s.GetHeadSHA(),
		CI: &forges.Check{
			Name:  s.GetApp().GetName(),
			State: checkRunState(s.GetStatus(), s.GetConclusion()),
		},
	}
	targetPullRequest(ev, p.Repo, s.PullRequests)
	return ev, nil
}

// targetPullRequest names the pull request of a CI event when exactly one
// pull request of this repository has the commit at its head.
func targetPullRequest(ev *forges.Event, repo *gh.Repository, prs []*gh.PullRequest) {
	var found *gh.PullRequest
	for _, pr := range prs {
		if pr.GetBase().GetRepo().GetID() != repo.GetID() || pr.GetNumber() <= 0 {
			continue
		}
		if found != nil {
			return
		}
		found = pr
	}
	if found != nil {
		ev.Target.Kind = forges.TargetMergeRequest
		ev.Target.Number = int64(found.GetNumber())
	}
}

func parseDelete(body []byte) (*forges.Event, error) {
	var p gh.DeleteEvent
	if err := decode("delete", body, &p); err != nil {
		return nil, err
	}
	if p.GetRefType() != "branch" {
		return ignored("delete of a %s is not used", p.GetRefType()), nil
	}
	proj, err := project("delete", p.Repo)
	if err != nil {
		return nil, err
	}
	if p.GetRef() == "" {
		return nil, malformed("delete: no ref")
	}
	return &forges.Event{
		Type:   forges.EventBranchDeleted,
		Actor:  p.GetSender().GetLogin(),
		Target: forges.Target{Project: proj},
		Branch: p.GetRef(),
	}, nil
}

func parsePush(body []byte) (*forges.Event, error) {
	var p gh.PushEvent
	if err := decode("push", body, &p); err != nil {
		return nil, err
	}
	branch, ok := strings.CutPrefix(p.GetRef(), "refs/heads/")
	if !ok || branch == "" {
		return ignored("push to %q is not to a branch", p.GetRef()), nil
	}
	r := p.GetRepo()
	if r.GetOwner().GetLogin() == "" || r.GetName() == "" {
		return nil, malformed("push: no repository owner and name")
	}
	ev := &forges.Event{
		Type:   forges.EventPush,
		Actor:  p.GetSender().GetLogin(),
		Target: forges.Target{Project: forges.Project{Owner: r.GetOwner().GetLogin(), Name: r.GetName()}},
		Branch: branch,
		SHA:    p.GetAfter(),
	}
	if p.GetDeleted() {
		ev.Type = forges.EventBranchDeleted
		ev.SHA = ""
	}
	return ev, nil
}
