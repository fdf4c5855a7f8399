package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// Only trusted words are instructions (docs/design.md, "The trust
// boundary"): what people AGENT_TRUSTED_AUTHORS names wrote reaches the
// prompt as the thread; anyone else's comment is quoted as material with
// its author; a marker counts only on a comment of the bot's own account;
// the plan a run follows is the one ai::validate_plan approved, unchanged,
// and so is the issue's description.

// trustRule is AGENT_TRUSTED_AUTHORS read: a permission at least, or names.
type trustRule struct {
	min   forges.Permission
	names []string // lower case; when set, only they
}

var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]*$`)

func parseTrusted(v string) (trustRule, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "write":
		return trustRule{min: forges.PermissionWrite}, nil
	case "admin", "maintain":
		return trustRule{min: forges.PermissionAdmin}, nil
	}
	var r trustRule
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if !userName.MatchString(n) {
			return r, fmt.Errorf("%q is not write, admin, maintain, or a list of user names (%q is not a user name)", v, n)
		}
		r.names = append(r.names, strings.ToLower(n))
	}
	return r, nil
}

// trust tells who of a project's people are trusted, asking the forge at
// most once per author.
type trust struct {
	e     *Engine
	mb    *state.Mailbox
	rule  trustRule
	known map[string]bool
}

func (e *Engine) trustOf(mb *state.Mailbox) *trust {
	rule, err := parseTrusted(AgentTrustedAuthors.Get(e.settings, scopeOf(mb)))
	if err != nil { // refused when set; a stored bad value trusts the default
		rule = trustRule{min: forges.PermissionWrite}
	}
	return &trust{e: e, mb: mb, rule: rule, known: map[string]bool{}}
}

// trusted tells whether author's words are instructions. A forge that
// cannot say is an error: no comment is trusted by default.
func (t *trust) trusted(ctx context.Context, author string) (bool, error) {
	key := strings.ToLower(author)
	if ok, seen := t.known[key]; seen {
		return ok, nil
	}
	if len(t.rule.names) > 0 {
		t.known[key] = slices.Contains(t.rule.names, key)
		return t.known[key], nil
	}
	perm, err := t.e.on(t.mb.Forge).Permission(ctx, projectOf(t.mb), author)
	if err != nil {
		return false, fmt.Errorf("permission of %s: %w", author, err)
	}
	t.known[key] = perm >= t.rule.min
	return t.known[key], nil
}

// digest is the SHA-256 of text, hex.
func digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// bodyDigest is the digest of an issue's description outside the bot's
// section, which the bot itself rewrites.
func bodyDigest(body string) string {
	return digest(strings.TrimSpace(forges.ReplaceSection(body, "")))
}

// botPlan is the bot's latest plan comment of the thread: a marker counts
// only on a comment of the bot's own account.
func botPlan(comments []forges.Comment, me string) (forges.Comment, bool) {
	for i := len(comments) - 1; i >= 0; i-- {
		c := comments[i]
		if _, kind, ok := forges.ParseMarker(c.Body); ok && kind == lifecycle.KindPlan && strings.EqualFold(c.Author, me) {
			return c, true
		}
	}
	return forges.Comment{}, false
}

// recordValidation binds ai::validate_plan to the plan and description it
// approves, read from the forge now.
func (e *Engine) recordValidation(ctx context.Context, mb *state.Mailbox, actor string) error {
	t := issueTarget(mb)
	comments, err := e.on(mb.Forge).Comments(ctx, t)
	if err != nil {
		return err
	}
	plan, ok := botPlan(comments, e.meOn(mb.Forge))
	if !ok {
		return errors.New("validate_plan: the thread has no plan comment of the bot's")
	}
	is, err := e.on(mb.Forge).Issue(ctx, projectOf(mb), mb.IID)
	if err != nil {
		return err
	}
	mb.Validated = &state.Validation{PlanCommentID: plan.ID, PlanSHA256: digest(plan.Body), BodySHA256: bodyDigest(is.Body), By: actor, At: e.now()}
	return nil
}

// validatedPlan is the plan that v approved, read from the thread now, and
// what no longer matches v ("" when all does): the plan comment deleted or
// edited, the description edited.
func validatedPlan(v state.Validation, comments []forges.Comment, body string) (plan, changed string) {
	var what []string
	i := slices.IndexFunc(comments, func(c forges.Comment) bool { return c.ID == v.PlanCommentID })
	switch {
	case i < 0:
		what = append(what, "the validated plan comment was deleted")
	case digest(comments[i].Body) != v.PlanSHA256:
		what = append(what, "the validated plan comment was edited")
	default:
		plan = stripMarker(comments[i].Body)
	}
	if bodyDigest(body) != v.BodySHA256 {
		what = append(what, "the issue's description was edited")
	}
	return plan, strings.Join(what, " and ")
}

// confirm reads back from the forge's API what a privileged event claims,
// so a payload that names the wrong actor, label or comment acts on
// nothing: a command label must be on the target now, a comment must exist
// with that author and body. False, with why, when the forge disagrees.
func (e *Engine) confirm(ctx context.Context, ev *forges.Event, in lifecycle.Intent) (bool, string, error) {
	f := e.on(ev.Target.Project.Forge)
	switch {
	case in.Kind == lifecycle.IntentCommand && ev.Target.Kind != forges.TargetMergeRequest:
		is, err := f.Issue(ctx, ev.Target.Project, ev.Target.Number)
		if err != nil {
			return false, "", err
		}
		if !slices.Contains(is.Labels, in.Command.Label()) {
			return false, "the forge does not show " + in.Command.Label() + " on the issue", nil
		}
	case in.Kind == lifecycle.IntentReview && ev.Review != nil:
		return e.confirmReview(ctx, f, ev)
	case ev.Comment != nil && ev.Comment.ID != 0:
		comments, err := f.Comments(ctx, ev.Target)
		if err != nil {
			return false, "", err
		}
		i := slices.IndexFunc(comments, func(c forges.Comment) bool { return c.ID == ev.Comment.ID })
		if i < 0 || !strings.EqualFold(comments[i].Author, ev.Actor) || strings.TrimSpace(comments[i].Body) != strings.TrimSpace(ev.Comment.Body) {
			return false, "the forge does not show that comment by " + ev.Actor, nil
		}
	}
	return true, "", nil
}

// confirmReview reads a review back: every text the event claims (the
// review's body, each line comment) must be among the merge request's
// review texts on the forge, by the event's actor. A review that claims no
// text (a bare approval) brings nothing to the prompt and needs no reading.
func (e *Engine) confirmReview(ctx context.Context, f forges.Forge, ev *forges.Event) (bool, string, error) {
	claimed := []string{strings.TrimSpace(ev.Review.Body)}
	for _, c := range ev.Review.Comments {
		claimed = append(claimed, strings.TrimSpace(c.Body))
	}
	claimed = slices.DeleteFunc(claimed, func(s string) bool { return s == "" })
	if len(claimed) == 0 {
		return true, "", nil
	}
	onForge, err := f.ReviewComments(ctx, ev.Target.Project, ev.Target.Number, time.Time{})
	if err != nil {
		return false, "", err
	}
	for _, text := range claimed {
		found := slices.ContainsFunc(onForge, func(c forges.ReviewComment) bool {
			return strings.EqualFold(c.Author, ev.Actor) && strings.TrimSpace(c.Body) == text
		})
		if !found {
			return false, "the forge does not show that review by " + ev.Actor, nil
		}
	}
	return true, "", nil
}
