package outcomes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// Records is what Load reads of the state store (*state.Store has it).
type Records interface {
	ListMailboxes(f state.MailboxFilter, cursor string, limit int) ([]state.MailboxRow, string, error)
	Runs(mailboxID string) ([]state.Run, error)
	RunWithSessions(runID string) (state.Run, []state.LLMSession, error)
}

// Filter says which outcomes Load makes and at what time.
type Filter struct {
	// Since keeps the issues assigned at or after it; zero keeps every
	// issue (an issue whose assignment is unknown counts then only).
	Since time.Time
	// Now and AbandonAfter are Derive's.
	Now          time.Time
	AbandonAfter time.Duration
}

// pageSize is how many mailboxes Load asks the store for at a time.
const pageSize = 200

// Load derives the outcome of every issue of project p that f keeps, and
// says, one sentence each, the records it could not read: an issue whose
// runs or sessions could not all be read has the outcome of those it read.
// It reads project p: the caller decides first whether p may be read.
// A ctx done stops it, with what it made so far and a problem saying so.
func Load(ctx context.Context, rs Records, p state.ProjectRef, f Filter) ([]Outcome, []string) {
	var out []Outcome
	var problems []string
	mf := state.MailboxFilter{Forge: p.Forge, Owner: p.Owner, Project: p.Project}
	for cursor := ""; ; {
		if err := ctx.Err(); err != nil {
			return out, append(problems, fmt.Sprintf("outcomes of %s/%s: %v", p.Owner, p.Project, err))
		}
		rows, next, err := rs.ListMailboxes(mf, cursor, pageSize)
		if err != nil {
			return out, append(problems, fmt.Sprintf("mailboxes of %s/%s: %v", p.Owner, p.Project, err))
		}
		for _, row := range rows {
			mb := row.Mailbox
			if mb.Kind != state.KindIssue {
				continue
			}
			runs, sessions, err := mailboxRecords(rs, mb.ID)
			if err != nil {
				problems = append(problems, err.Error())
			}
			o := Derive(mb, runs, sessions, f.Now, f.AbandonAfter)
			if !f.Since.IsZero() && (o.AssignedAt.IsZero() || o.AssignedAt.Before(f.Since)) {
				continue
			}
			out = append(out, o)
		}
		if next == "" {
			return out, problems
		}
		cursor = next
	}
}

// mailboxRecords is the runs of a mailbox and their sessions, with what
// could not be read.
func mailboxRecords(rs Records, id string) ([]state.Run, []state.LLMSession, error) {
	runs, err := rs.Runs(id)
	if err != nil {
		err = fmt.Errorf("runs of mailbox %s: %w", id, err)
	}
	var sessions []state.LLMSession
	errs := []error{err}
	for _, run := range runs {
		_, ss, err := rs.RunWithSessions(run.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("llm sessions of run %s: %w", run.ID, err))
		}
		sessions = append(sessions, ss...)
	}
	return runs, sessions, errors.Join(errs...)
}
