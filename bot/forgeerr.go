package bot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// A forge call is retried in one layer only, the forge client's
// (forges.RetryPolicy): when one fails, the forge has already been given its
// whole budget, or has refused. The engine then does not try the event
// again; it sets it aside (quarantine) with a sentence that tells the person
// reading the thread what to do, and ai::retry handles it again once they
// have.

// forgeFailed reports whether err is the forge's final word on a call:
// a refusal, something missing, or no answer within the call's budget.
func forgeFailed(err error) bool {
	return forges.Refused(err) || errors.Is(err, forges.ErrNotFound) || errors.Is(err, forges.ErrUnavailable)
}

// explain words a failed event's error for the thread: a forge's refusal as
// what a person can do about it, anything else as it is.
func (e *Engine) explain(key string, err error) error {
	if !forgeFailed(err) {
		return err
	}
	project, me := "the project", ""
	if k, perr := state.ParseMailboxID(key); perr == nil {
		project, me = k.Owner+"/"+k.Project, e.meOn(k.Forge)
	}
	detail := firstLine(e.redact(err.Error()))
	var s string
	switch {
	case errors.Is(err, forges.ErrUnauthorized):
		s = "the forge refused Alfred's token (401): it is wrong, expired or revoked; an administrator must set a valid one (ALFRED_FORGE_TOKEN) and restart Alfred"
	case errors.Is(err, forges.ErrForbidden):
		s = fmt.Sprintf("the forge did not allow Alfred's account @%s to do this on %s (403): give it write access to the repository (admin on Forgejo and Gitea, which need it to read permissions)", me, project)
	case errors.Is(err, forges.ErrConflict):
		s = fmt.Sprintf("the forge refused because %s changed meanwhile (409): look at the branch or merge request", project)
	case errors.Is(err, forges.ErrInvalid):
		s = "the forge refused Alfred's request as invalid (422)"
	case errors.Is(err, forges.ErrNotFound):
		s = "the forge answered that something Alfred needs does not exist (404): it may have been deleted or renamed"
	default:
		s = "the forge did not answer in time or kept failing (" + e.cfg.ForgeCallBudget.String() + " per call)"
	}
	return &forgeError{sentence: s, detail: detail, err: err}
}

// forgeError is a forge failure worded for people; it still wraps the cause.
type forgeError struct {
	sentence, detail string
	err              error
}

func (f *forgeError) Error() string {
	// The detail is one line, with no "|" that would split a table cell.
	return f.sentence + " (" + strings.ReplaceAll(f.detail, "|", "/") + ")"
}

func (f *forgeError) Unwrap() error { return f.err }
