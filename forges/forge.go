// Package forges owns everything Alfred says to and hears from a forge: the Forge
// interface the engine is written against, the normalized webhook Event, webhook
// verification, the managed text shared by all forges (comment markers and the
// description section), and the label catalogue. One sub-package per forge
// (forgejo, github, gitlab) implements the interface with that forge's SDK.
//
// The engine never needs to know which forge it talks to: every difference lives
// in a sub-package, and a capability a forge lacks is a small optional interface
// beside Forge rather than a method that fails.
//
// It never imports bot, state, agents, sandbox or views: a forge knows
// nothing of the engine that drives it.
package forges

import (
	"context"
	"time"
)

// Kind names a forge implementation.
type Kind string

// The forge kinds Alfred speaks to.
const (
	Forgejo Kind = "forgejo" // Forgejo and Gitea
	GitHub  Kind = "github"
	GitLab  Kind = "gitlab"
)

// Project identifies one repository on one configured forge.
type Project struct {
	// Forge is the configured forge's name (the {forge} of /webhooks/{forge}).
	Forge string `json:"forge"`
	// Owner is the organization, user or (GitLab) full group path.
	Owner string `json:"owner"`
	// Name is the repository name inside Owner.
	Name string `json:"name"`
}

// FullName is "owner/name", the form forges print.
func (p Project) FullName() string { return p.Owner + "/" + p.Name }

// Permission is what a user may do on a project, from least to most.
type Permission int

// Permissions, ordered so that a comparison tells whether a user may steer.
const (
	PermissionNone Permission = iota
	PermissionRead
	PermissionWrite
	PermissionAdmin
)

func (p Permission) String() string {
	switch p {
	case PermissionRead:
		return "read"
	case PermissionWrite:
		return "write"
	case PermissionAdmin:
		return "admin"
	default:
		return "none"
	}
}

// User is an account on the forge.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

// Issue is the part of an issue the lifecycle reads.
type Issue struct {
	Number    int64     `json:"number"` // iid
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	State     string    `json:"state"` // "open" or "closed"
	Author    string    `json:"author"`
	Labels    []string  `json:"labels"`
	Assignees []string  `json:"assignees"`
	URL       string    `json:"url"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Comment is a comment in an issue or merge request thread.
type Comment struct {
	ID        int64     `json:"id"`
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Label is a label definition of a project. Color is six hex digits without '#'.
type Label struct {
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description"`
	// Exclusive asks the forge to keep at most one label of the label's scope
	// on an issue. Only a Forge implementing ExclusiveLabels stores it;
	// the others ignore it and read it back false.
	Exclusive bool `json:"exclusive,omitempty"`
	// Formerly are names the label had in other catalogues (the other
	// form of a status label): SyncLabels renames a label found under one
	// of them on a forge that can (LabelRenamer), so its issues keep it.
	Formerly []string `json:"formerly,omitempty"`
}

// MergeRequest states.
const (
	MergeRequestOpen   = "open"
	MergeRequestClosed = "closed"
	MergeRequestMerged = "merged"
)

// Mergeable is a merge request's ability to merge into its target.
type Mergeable string

// Mergeable states. Forges compute mergeability in the background, so Unknown
// is a normal answer that means "ask again later".
const (
	MergeableUnknown  Mergeable = "unknown"
	MergeableClean    Mergeable = "clean"
	MergeableConflict Mergeable = "conflict"
)

// MergeRequest is a pull request (Forgejo, GitHub) or merge request (GitLab).
type MergeRequest struct {
	Number       int64     `json:"number"` // iid
	Title        string    `json:"title"`
	Body         string    `json:"body"`
	State        string    `json:"state"` // MergeRequestOpen, MergeRequestClosed or MergeRequestMerged
	Author       string    `json:"author"`
	SourceBranch string    `json:"source_branch"`
	TargetBranch string    `json:"target_branch"`
	HeadSHA      string    `json:"head_sha"`
	Mergeable    Mergeable `json:"mergeable"`
	URL          string    `json:"url"`
	// MergedBy is the login that merged it, as the forge's API says on a
	// merged merge request; empty otherwise (and in webhook payloads, whose
	// event names the actor).
	MergedBy string `json:"merged_by,omitempty"`
}

// NewMergeRequest is what the bot opens after a development run.
type NewMergeRequest struct {
	Title        string
	Body         string // carries the closing keyword for the issue ("Closes #7")
	SourceBranch string
	TargetBranch string
}

// CIState is the combined state of the checks of one commit.
type CIState string

// CI states. Pending covers queued and running; None means no check reported.
const (
	CINone    CIState = "none"
	CIPending CIState = "pending"
	CISuccess CIState = "success"
	CIFailure CIState = "failure"
)

// Check is one status, check run, Actions job or pipeline job of a commit.
type Check struct {
	Name        string  `json:"name"`
	State       CIState `json:"state"`
	Description string  `json:"description,omitempty"`
	URL         string  `json:"url,omitempty"`
}

// CIStatus is the combined CI state of a commit and the checks behind it.
type CIStatus struct {
	SHA    string  `json:"sha"`
	State  CIState `json:"state"`
	Checks []Check `json:"checks"`
}

// ReviewComment is a comment left in a review of a merge request, on a line of
// the diff or on the review as a whole (Path empty).
type ReviewComment struct {
	ID        int64     `json:"id"`
	ReviewID  int64     `json:"review_id,omitempty"`
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	Path      string    `json:"path,omitempty"`
	Line      int       `json:"line,omitempty"`
	URL       string    `json:"url,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Forge is one configured forge, as the engine sees it. Every method that talks
// to the forge takes a context, honours its deadline and wraps errors with what
// it was doing; "does not exist" answers wrap ErrNotFound.
//
// Issue and merge request numbers are the iid inside the project. On forges
// where pull requests are issues (Forgejo, GitHub), comment and label methods
// take either number; on GitLab the implementation tells them apart with
// Target.
type Forge interface {
	// Kind says which implementation this is.
	Kind() Kind
	// Me is the bot's own account, used to ignore its own events.
	Me(ctx context.Context) (User, error)
	// Permission is what user may do on project. Unknown users are PermissionNone.
	Permission(ctx context.Context, p Project, user string) (Permission, error)

	// Issue reads an issue.
	Issue(ctx context.Context, p Project, number int64) (*Issue, error)
	// SetIssueBody replaces an issue's description. Callers keep the text
	// people wrote by editing only the managed section (see ReplaceSection).
	SetIssueBody(ctx context.Context, p Project, number int64, body string) error

	// Comments lists every comment of an issue or merge request thread, oldest first.
	Comments(ctx context.Context, t Target) ([]Comment, error)
	// CreateComment posts a comment.
	CreateComment(ctx context.Context, t Target, body string) (*Comment, error)
	// EditComment replaces a comment's text.
	EditComment(ctx context.Context, t Target, commentID int64, body string) (*Comment, error)

	// Labels lists the label definitions of a project.
	Labels(ctx context.Context, p Project) ([]Label, error)
	// CreateLabel defines a label.
	CreateLabel(ctx context.Context, p Project, l Label) error
	// UpdateLabel changes the colour and description of the label named l.Name.
	UpdateLabel(ctx context.Context, p Project, l Label) error
	// AddLabels puts labels (by name, defined already) on an issue or merge request.
	AddLabels(ctx context.Context, t Target, names ...string) error
	// RemoveLabel takes a label off; removing a label that is not there is no error.
	RemoveLabel(ctx context.Context, t Target, name string) error

	// MergeRequest reads a merge request.
	MergeRequest(ctx context.Context, p Project, number int64) (*MergeRequest, error)
	// MergeRequestForBranch finds the open merge request whose source branch is
	// branch; none wraps ErrNotFound.
	MergeRequestForBranch(ctx context.Context, p Project, branch string) (*MergeRequest, error)
	// CreateMergeRequest opens a merge request.
	CreateMergeRequest(ctx context.Context, p Project, mr NewMergeRequest) (*MergeRequest, error)
	// ReviewComments lists review comments of a merge request created after since
	// (all of them for the zero time), oldest first.
	ReviewComments(ctx context.Context, p Project, number int64, since time.Time) ([]ReviewComment, error)

	// CIStatus combines every status, check run, Actions run or pipeline of a commit.
	CIStatus(ctx context.Context, p Project, sha string) (*CIStatus, error)
	// BranchExists tells whether branch exists on the forge.
	BranchExists(ctx context.Context, p Project, branch string) (bool, error)
	// DefaultBranch is the branch merge requests target.
	DefaultBranch(ctx context.Context, p Project) (string, error)

	// CloneURL is the HTTPS URL git clones and pushes project with.
	CloneURL(ctx context.Context, p Project) (string, error)
	// GitCredentials are the user name and password (token) for git over
	// HTTPS to project p. They are secrets: never log them. Where the token
	// is per repository and short-lived (a GitHub App's installation token)
	// it is valid for at least a minute more; ask again before each use.
	GitCredentials(ctx context.Context, p Project) (username, password string, err error)
}

// TargetKind tells an issue from a merge request.
type TargetKind string

// Target kinds; their values are the mailbox kinds of the state store.
const (
	TargetIssue        TargetKind = "issue"
	TargetMergeRequest TargetKind = "mr"
)

// Target is an issue or a merge request of a project: what comments and labels attach to.
type Target struct {
	Project Project    `json:"project"`
	Kind    TargetKind `json:"kind"`
	Number  int64      `json:"number"`
}
