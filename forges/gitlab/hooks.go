package gitlab

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// Hooks verifies and parses GitLab webhook deliveries (project or group
// webhooks with a secret token).
//
// How GitLab events map to forges events:
//
//   - Issue Hook: open, close and reopen map one to one. An update is
//     reported by its most telling change, in this order: labels (labeled if
//     any label was added, else unlabeled, with the exact delta), assignees
//     (assigned if anyone was added, else unassigned), title or description
//     (edited); any other update is ignored.
//   - Note Hook on an issue or a merge request: comment created, or edited
//     when GitLab says action "update". On a merge request, a note of a
//     review thread (a DiffNote on a line of the diff, or a DiscussionNote
//     starting or answering a thread) is a review comment, as in
//     ReviewComments: GitLab has no "review submitted" hook (submitting a
//     batch of draft notes sends one Note Hook per note), so each new one is
//     a review_submitted event with state "commented" carrying that one
//     comment; an edited one is ignored. Notes on commits and snippets and
//     system notes are ignored.
//   - Merge Request Hook: open and reopen are mr_opened; update with oldrev
//     (new commits) is mr_updated, else a label change is issue_labeled or
//     issue_unlabeled with Target.Kind "mr", else ignored; merge is
//     mr_merged; close is mr_closed; approval and approved are
//     review_submitted with state "approved"; unapproval and unapproved are
//     ignored.
//   - Pipeline Hook: ci_status_changed for the pipeline's SHA (see CIStatus
//     for the state mapping; a skipped pipeline is ignored).
//   - Push Hook: branch_deleted when after is all zeros, else push. Tag pushes
//     and every other hook are ignored.
//
// DeliveryID is GitLab's Idempotency-Key (GitLab 17.4+, the same on every
// retry of a delivery); without it, X-Gitlab-Event-UUID followed by "/" and
// the object kind, because GitLab gives one UUID to all the hooks a single
// request fires (a comment with a /label quick action sends a Note Hook and
// an Issue Hook under the same UUID).
type Hooks struct{}

var _ forges.Hooks = Hooks{}

// Header names GitLab sends.
const (
	HeaderToken          = "X-Gitlab-Token"
	HeaderEvent          = "X-Gitlab-Event"
	HeaderEventUUID      = "X-Gitlab-Event-UUID"
	HeaderIdempotencyKey = "Idempotency-Key"
)

const zeroSHA = "0000000000000000000000000000000000000000"

// Verify compares X-Gitlab-Token with each secret (forges.VerifyToken: in
// constant time, as digests). GitLab sends the secret itself, not a
// signature of the body.
func (Hooks) Verify(h http.Header, _ []byte, secrets []string) error {
	return forges.VerifyToken(HeaderToken, h.Get(HeaderToken), secrets)
}

// Parse normalizes a verified delivery.
func (Hooks) Parse(h http.Header, body []byte) (*forges.Event, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: gitlab payload: %v", forges.ErrMalformed, err)
	}
	kind := env.ObjectKind
	var (
		ev  *forges.Event
		err error
	)
	switch kind {
	case "":
		if env.EventName == "" {
			return nil, fmt.Errorf("%w: gitlab payload has no object_kind", forges.ErrMalformed)
		}
		// System hooks name their event in event_name.
		ev = &forges.Event{Type: forges.EventIgnored, Reason: "system hook " + env.EventName}
	case "issue":
		ev, err = parseIssue(body)
	case "note":
		ev, err = parseNote(body)
	case "merge_request":
		ev, err = parseMergeRequest(body)
	case "pipeline":
		ev, err = parsePipeline(body)
	case "push":
		ev, err = parsePush(body)
	default:
		ev = &forges.Event{Type: forges.EventIgnored, Reason: fmt.Sprintf("%s events are not used", kind)}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: gitlab %s payload: %v", forges.ErrMalformed, kind, err)
	}
	ev.DeliveryID = deliveryID(h, kind)
	return ev, nil
}

func deliveryID(h http.Header, kind string) string {
	if k := h.Get(HeaderIdempotencyKey); k != "" {
		return k
	}
	id := h.Get(HeaderEventUUID)
	if id == "" || kind == "" {
		return id
	}
	return id + "/" + kind
}

// envelope is what every payload starts with.
type envelope struct {
	ObjectKind string `json:"object_kind"`
	EventName  string `json:"event_name"`
}

type hookUser struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
}

type hookProject struct {
	PathWithNamespace string `json:"path_with_namespace"`
	WebURL            string `json:"web_url"`
}

// project splits "group/sub/name" at its last slash.
func (p hookProject) project() (forges.Project, error) {
	i := strings.LastIndexByte(p.PathWithNamespace, '/')
	if i <= 0 || i == len(p.PathWithNamespace)-1 {
		return forges.Project{}, fmt.Errorf("project path_with_namespace %q is not group/name", p.PathWithNamespace)
	}
	return forges.Project{Owner: p.PathWithNamespace[:i], Name: p.PathWithNamespace[i+1:]}, nil
}

type hookLabel struct {
	Title string `json:"title"`
}

func titles(ls []hookLabel) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Title)
	}
	return out
}

func usernames(us []hookUser) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.Username)
	}
	return out
}

// hookTime reads the several time formats GitLab payloads use
// ("2013-12-03T17:15:43Z", "2015-05-17 17:06:40 UTC",
// "2024-01-24 16:27:40 +0100"); null or an unknown format is the zero time.
type hookTime time.Time

func (t *hookTime) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil || s == "" {
		*t = hookTime{}
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if v, err := time.Parse(layout, s); err == nil {
			*t = hookTime(v.UTC())
			return nil
		}
	}
	*t = hookTime{}
	return nil
}

// change is one entry of a payload's "changes".
type change[T any] struct {
	Previous T `json:"previous"`
	Current  T `json:"current"`
}

// diff is what is in cur and not in prev, and the other way round, in the
// order of each list. It is linear: a payload with huge label lists costs
// no more than reading it.
func diff(prev, cur []string) (added, removed []string) {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, s := range list {
			m[s] = true
		}
		return m
	}
	inPrev, inCur := in(prev), in(cur)
	for _, c := range cur {
		if !inPrev[c] {
			added = append(added, c)
		}
	}
	for _, p := range prev {
		if !inCur[p] {
			removed = append(removed, p)
		}
	}
	return added, removed
}

// labelEvent fills a label event from a labels change; ok is false when the
// change moved nothing.
func labelEvent(ev *forges.Event, c *change[[]hookLabel]) (ok bool) {
	if c == nil {
		return false
	}
	cur := titles(c.Current)
	added, removed := diff(titles(c.Previous), cur)
	if len(added) == 0 && len(removed) == 0 {
		return false
	}
	ev.Type = forges.EventIssueUnlabeled
	if len(added) > 0 {
		ev.Type = forges.EventIssueLabeled
	}
	ev.Labels, ev.LabelsAdded, ev.LabelsRemoved, ev.LabelDeltaKnown = cur, added, removed, true
	return true
}

// present tells whether a raw JSON field was sent with something in it.
func present(r json.RawMessage) bool {
	r = bytes.TrimSpace(r)
	return len(r) > 0 && !bytes.Equal(r, []byte("null"))
}

type issuePayload struct {
	User             hookUser    `json:"user"`
	Project          hookProject `json:"project"`
	ObjectAttributes struct {
		IID         int64    `json:"iid"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		State       string   `json:"state"`
		Action      string   `json:"action"`
		URL         string   `json:"url"`
		UpdatedAt   hookTime `json:"updated_at"`
	} `json:"object_attributes"`
	Labels    []hookLabel `json:"labels"`
	Assignees []hookUser  `json:"assignees"`
	Changes   struct {
		Labels      *change[[]hookLabel] `json:"labels"`
		Assignees   *change[[]hookUser]  `json:"assignees"`
		Title       json.RawMessage      `json:"title"`
		Description json.RawMessage      `json:"description"`
	} `json:"changes"`
}

func parseIssue(body []byte) (*forges.Event, error) {
	var pl issuePayload
	if err := json.Unmarshal(body, &pl); err != nil {
		return nil, err
	}
	p, err := pl.Project.project()
	if err != nil {
		return nil, err
	}
	a := pl.ObjectAttributes
	if a.IID <= 0 {
		return nil, fmt.Errorf("issue iid %d", a.IID)
	}
	ev := &forges.Event{
		Actor:  pl.User.Username,
		Target: forges.Target{Project: p, Kind: forges.TargetIssue, Number: a.IID},
		Issue: &forges.Issue{
			Number:    a.IID,
			Title:     a.Title,
			Body:      a.Description,
			State:     issueState(a.State),
			Labels:    titles(pl.Labels),
			Assignees: usernames(pl.Assignees),
			URL:       a.URL,
			UpdatedAt: time.Time(a.UpdatedAt),
		},
	}
	switch a.Action {
	case "open":
		ev.Type = forges.EventIssueOpened
		ev.Issue.Author = pl.User.Username // the payload names the author by id only
	case "close":
		ev.Type = forges.EventIssueClosed
	case "reopen":
		ev.Type = forges.EventIssueReopened
	case "update":
		c := pl.Changes
		switch {
		case labelEvent(ev, c.Labels):
		case c.Assignees != nil && assigneeEvent(ev, c.Assignees):
		case present(c.Title) || present(c.Description):
			ev.Type = forges.EventIssueEdited
		default:
			return &forges.Event{Type: forges.EventIgnored, Reason: "issue update changes nothing the bot follows"}, nil
		}
	default:
		return &forges.Event{Type: forges.EventIgnored, Reason: fmt.Sprintf("issue action %q is not used", a.Action)}, nil
	}
	return ev, nil
}

func assigneeEvent(ev *forges.Event, c *change[[]hookUser]) bool {
	added, removed := diff(usernames(c.Previous), usernames(c.Current))
	switch {
	case len(added) > 0:
		ev.Type, ev.Assignee = forges.EventIssueAssigned, added[0]
	case len(removed) > 0:
		ev.Type, ev.Assignee = forges.EventIssueUnassigned, removed[0]
	default:
		return false
	}
	ev.Issue.Assignees = usernames(c.Current)
	return true
}

type notePosition struct {
	NewPath string `json:"new_path"`
	OldPath string `json:"old_path"`
	NewLine int64  `json:"new_line"`
	OldLine int64  `json:"old_line"`
}

type notePayload struct {
	User             hookUser    `json:"user"`
	Project          hookProject `json:"project"`
	ObjectAttributes struct {
		ID           int64         `json:"id"`
		Note         string        `json:"note"`
		NoteableType string        `json:"noteable_type"`
		Type         *string       `json:"type"`
		Action       string        `json:"action"`
		System       bool          `json:"system"`
		URL          string        `json:"url"`
		CreatedAt    hookTime      `json:"created_at"`
		UpdatedAt    hookTime      `json:"updated_at"`
		Position     *notePosition `json:"position"`
	} `json:"object_attributes"`
	Issue        *struct{ IID int64 } `json:"issue"`
	MergeRequest *struct{ IID int64 } `json:"merge_request"`
}

func parseNote(body []byte) (*forges.Event, error) {
	var pl notePayload
	if err := json.Unmarshal(body, &pl); err != nil {
		return nil, err
	}
	a := pl.ObjectAttributes
	t, ok, err := pl.target()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return &forges.Event{Type: forges.EventIgnored, Reason: fmt.Sprintf("notes on %s are not used", a.NoteableType)}, nil
	}
	if a.System {
		return &forges.Event{Type: forges.EventIgnored, Reason: "system note"}, nil
	}
	p, err := pl.Project.project()
	if err != nil {
		return nil, err
	}
	t.Project = p
	ev := &forges.Event{Actor: pl.User.Username, Target: t}
	if t.Kind == forges.TargetMergeRequest && a.Type != nil && isReviewType(*a.Type) {
		return reviewNoteEvent(ev, &pl), nil
	}
	ev.Type = forges.EventCommentCreated
	if a.Action == "update" {
		ev.Type = forges.EventCommentEdited
	}
	ev.Comment = &forges.Comment{
		ID:        a.ID,
		Author:    pl.User.Username,
		Body:      a.Note,
		URL:       a.URL,
		CreatedAt: time.Time(a.CreatedAt),
		UpdatedAt: time.Time(a.UpdatedAt),
	}
	return ev, nil
}

// target is the issue or merge request the note is on, without its project;
// ok is false for a note on anything else.
func (pl *notePayload) target() (t forges.Target, ok bool, err error) {
	switch pl.ObjectAttributes.NoteableType {
	case "Issue":
		if pl.Issue == nil {
			return t, false, fmt.Errorf("note on an issue without the issue")
		}
		t = forges.Target{Kind: forges.TargetIssue, Number: pl.Issue.IID}
	case "MergeRequest":
		if pl.MergeRequest == nil {
			return t, false, fmt.Errorf("note on a merge request without the merge request")
		}
		t = forges.Target{Kind: forges.TargetMergeRequest, Number: pl.MergeRequest.IID}
	default:
		return t, false, nil
	}
	if t.Number <= 0 {
		return t, false, fmt.Errorf("note target iid %d", t.Number)
	}
	return t, true, nil
}

// reviewNoteEvent makes ev, a note of a review thread, the review_submitted
// event of that one comment; an edited one is ignored.
func reviewNoteEvent(ev *forges.Event, pl *notePayload) *forges.Event {
	a := pl.ObjectAttributes
	if a.Action == "update" {
		return &forges.Event{Type: forges.EventIgnored, Reason: "edited review comment"}
	}
	rc := forges.ReviewComment{
		ID:        a.ID,
		Author:    pl.User.Username,
		Body:      a.Note,
		URL:       a.URL,
		CreatedAt: time.Time(a.CreatedAt),
	}
	if pos := a.Position; pos != nil {
		rc.Path, rc.Line = cmp.Or(pos.NewPath, pos.OldPath), int(cmp.Or(pos.NewLine, pos.OldLine))
	}
	ev.Type = forges.EventReviewSubmitted
	ev.Review = &forges.Review{State: "commented", Comments: []forges.ReviewComment{rc}}
	return ev
}

// isReviewType tells the note types of review threads: diff notes and
// discussion notes (see ReviewComments).
func isReviewType(t string) bool {
	return t == "DiffNote" || t == "LegacyDiffNote" || t == "DiscussionNote"
}

type mergeRequestPayload struct {
	User             hookUser    `json:"user"`
	Project          hookProject `json:"project"`
	ObjectAttributes struct {
		IID                 int64  `json:"iid"`
		Title               string `json:"title"`
		Description         string `json:"description"`
		State               string `json:"state"`
		Action              string `json:"action"`
		URL                 string `json:"url"`
		SourceBranch        string `json:"source_branch"`
		TargetBranch        string `json:"target_branch"`
		MergeStatus         string `json:"merge_status"`
		DetailedMergeStatus string `json:"detailed_merge_status"`
		OldRev              string `json:"oldrev"`
		LastCommit          struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
	Labels  []hookLabel `json:"labels"`
	Changes struct {
		Labels *change[[]hookLabel] `json:"labels"`
	} `json:"changes"`
}

func parseMergeRequest(body []byte) (*forges.Event, error) {
	var pl mergeRequestPayload
	if err := json.Unmarshal(body, &pl); err != nil {
		return nil, err
	}
	p, err := pl.Project.project()
	if err != nil {
		return nil, err
	}
	a := pl.ObjectAttributes
	if a.IID <= 0 {
		return nil, fmt.Errorf("merge request iid %d", a.IID)
	}
	ev := &forges.Event{
		Actor:        pl.User.Username,
		Target:       forges.Target{Project: p, Kind: forges.TargetMergeRequest, Number: a.IID},
		MergeRequest: pl.mergeRequest(),
	}
	switch a.Action {
	case "open", "reopen":
		ev.Type = forges.EventMergeRequestOpened
		if a.Action == "open" {
			ev.MergeRequest.Author = pl.User.Username // the payload names the author by id only
		}
	case "update":
		switch {
		case a.OldRev != "":
			ev.Type, ev.SHA, ev.Branch = forges.EventMergeRequestUpdated, a.LastCommit.ID, a.SourceBranch
		case labelEvent(ev, pl.Changes.Labels):
		default:
			return &forges.Event{Type: forges.EventIgnored, Reason: "merge request update without new commits or label changes"}, nil
		}
	case "merge":
		ev.Type = forges.EventMergeRequestMerged
	case "close":
		ev.Type = forges.EventMergeRequestClosed
	case "approval", "approved":
		ev.Type = forges.EventReviewSubmitted
		ev.Review = &forges.Review{State: "approved"}
	default:
		return &forges.Event{Type: forges.EventIgnored, Reason: fmt.Sprintf("merge request action %q is not used", a.Action)}, nil
	}
	return ev, nil
}

// mergeRequest is the merge request the payload describes, without its
// author (the payload names it by id only).
func (pl *mergeRequestPayload) mergeRequest() *forges.MergeRequest {
	a := pl.ObjectAttributes
	status := a.DetailedMergeStatus
	if status == "" {
		status = a.MergeStatus
	}
	return &forges.MergeRequest{
		Number:       a.IID,
		Title:        a.Title,
		Body:         a.Description,
		State:        mergeRequestState(a.State),
		SourceBranch: a.SourceBranch,
		TargetBranch: a.TargetBranch,
		HeadSHA:      a.LastCommit.ID,
		Mergeable:    mergeable(status, false),
		URL:          a.URL,
	}
}

type pipelinePayload struct {
	User             hookUser    `json:"user"`
	Project          hookProject `json:"project"`
	ObjectAttributes struct {
		ID             int64  `json:"id"`
		Name           string `json:"name"`
		Ref            string `json:"ref"`
		Tag            bool   `json:"tag"`
		SHA            string `json:"sha"`
		Status         string `json:"status"`
		DetailedStatus string `json:"detailed_status"`
	} `json:"object_attributes"`
	MergeRequest *struct {
		IID int64 `json:"iid"`
	} `json:"merge_request"`
}

func parsePipeline(body []byte) (*forges.Event, error) {
	var pl pipelinePayload
	if err := json.Unmarshal(body, &pl); err != nil {
		return nil, err
	}
	p, err := pl.Project.project()
	if err != nil {
		return nil, err
	}
	a := pl.ObjectAttributes
	if a.SHA == "" {
		return nil, fmt.Errorf("pipeline %d has no sha", a.ID)
	}
	state, counted := pipelineState(a.Status)
	if !counted {
		return &forges.Event{Type: forges.EventIgnored, Reason: "skipped pipeline"}, nil
	}
	name := a.Name
	if name == "" {
		name = fmt.Sprintf("pipeline #%d (%s)", a.ID, a.Ref)
	}
	ev := &forges.Event{
		Type:   forges.EventCIStatusChanged,
		Actor:  pl.User.Username,
		Target: forges.Target{Project: p},
		SHA:    a.SHA,
		CI: &forges.Check{
			Name:        name,
			State:       state,
			Description: a.DetailedStatus,
			URL:         fmt.Sprintf("%s/-/pipelines/%d", strings.TrimSuffix(pl.Project.WebURL, "/"), a.ID),
		},
	}
	if !a.Tag {
		ev.Branch = a.Ref
	}
	if pl.MergeRequest != nil && pl.MergeRequest.IID > 0 {
		ev.Target.Kind, ev.Target.Number = forges.TargetMergeRequest, pl.MergeRequest.IID
	}
	return ev, nil
}

type pushPayload struct {
	Before       string      `json:"before"`
	After        string      `json:"after"`
	Ref          string      `json:"ref"`
	UserUsername string      `json:"user_username"`
	Project      hookProject `json:"project"`
}

func parsePush(body []byte) (*forges.Event, error) {
	var pl pushPayload
	if err := json.Unmarshal(body, &pl); err != nil {
		return nil, err
	}
	branch, ok := strings.CutPrefix(pl.Ref, "refs/heads/")
	if !ok || branch == "" {
		return &forges.Event{Type: forges.EventIgnored, Reason: fmt.Sprintf("push to %q is not a branch", pl.Ref)}, nil
	}
	p, err := pl.Project.project()
	if err != nil {
		return nil, err
	}
	ev := &forges.Event{Type: forges.EventPush, Actor: pl.UserUsername, Target: forges.Target{Project: p}, Branch: branch, SHA: pl.After}
	if pl.After == zeroSHA {
		ev.Type, ev.SHA = forges.EventBranchDeleted, pl.Before
	}
	return ev, nil
}
