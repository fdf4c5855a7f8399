package gitlabtest

import (
	"net/http"
	"strconv"
)

// Webhooks for the API's changes: what the bot does through the API fires
// the hooks GitLab fires for it, in the bot's name. ServeHTTP takes a
// snapshot of what a writing request may change (beforeAPI), routes it, and
// sends a hook for what did change (afterAPI): an Issue Hook for an issue
// updated (update, close or reopen, with its changes), a Note Hook for a
// note created or edited, a Merge Request Hook for a merge request opened or
// updated. A request that changed nothing (refused, or setting what was
// there) sends nothing.

// apiBefore is what one writing request may change, as it was.
type apiBefore struct {
	issue *fakeIssue // PUT issues/:iid
	mr    *fakeMR    // PUT merge_requests/:iid
	// POST .../notes: the target and its notes' count; PUT .../notes/:id:
	// also the note and its body.
	noteKey  *noteKey
	notes    int
	noteID   int64
	noteBody string
	mrs      map[int64]bool // POST merge_requests: the iids there were
}

// beforeAPI takes the snapshot of request r to seg; callers hold mu. It is
// nil when no webhook is set or r writes nothing that fires one.
func (f *Server) beforeAPI(r *http.Request, seg []string) *apiBefore {
	if f.hook == nil || len(seg) < 3 || seg[0] != "projects" || seg[1] != f.path && seg[1] != strconv.FormatInt(f.project, 10) {
		return nil
	}
	p, m := seg[2:], r.Method
	iid := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	switch {
	case match(p, "issues", "*") && m == http.MethodPut:
		if is := f.issues[iid(p[1])]; is != nil {
			return &apiBefore{issue: cloneIssue(is)}
		}
	case match(p, "merge_requests", "*") && m == http.MethodPut:
		if mr := f.mrs[iid(p[1])]; mr != nil {
			return &apiBefore{mr: cloneMR(mr)}
		}
	case match(p, "merge_requests") && m == http.MethodPost:
		b := &apiBefore{mrs: map[int64]bool{}}
		for n := range f.mrs {
			b.mrs[n] = true
		}
		return b
	case (match(p, "issues", "*", "notes") || match(p, "merge_requests", "*", "notes")) && m == http.MethodPost:
		key := noteKey{p[0], iid(p[1])}
		return &apiBefore{noteKey: &key, notes: len(f.notes[key])}
	case (match(p, "issues", "*", "notes", "*") || match(p, "merge_requests", "*", "notes", "*")) && m == http.MethodPut:
		key := noteKey{p[0], iid(p[1])}
		b := &apiBefore{noteKey: &key, notes: -1, noteID: iid(p[3])}
		for _, n := range f.notes[key] {
			if n.ID == b.noteID {
				b.noteBody = n.Body
				return b
			}
		}
	}
	return nil
}

// afterAPI queues the webhooks of what changed since b; callers hold mu.
// The actor is the token's user, the bot.
func (f *Server) afterAPI(b *apiBefore) {
	switch {
	case b == nil:
	case b.issue != nil:
		is := f.issues[b.issue.IID]
		if is != nil && len(f.issueChanges(b.issue, is)) > 0 {
			f.issueUpdated(b.issue, is, f.bot)
		}
	case b.mr != nil:
		if mr := f.mrs[b.mr.IID]; mr != nil {
			if c := f.mrChanges(b.mr, mr); len(c) > 0 {
				f.mrHook(mr, "update", f.bot, "", c, b.mr.UpdatedAt)
			}
		}
	case b.mrs != nil:
		for n, mr := range f.mrs {
			if !b.mrs[n] {
				f.mrHook(mr, "open", f.bot, "", nil, mr.CreatedAt)
			}
		}
	case b.noteKey != nil && b.notes >= 0:
		if notes := f.notes[*b.noteKey]; len(notes) > b.notes {
			for _, n := range notes[b.notes:] {
				f.noteHook(*b.noteKey, n, "create")
			}
		}
	case b.noteKey != nil:
		for _, n := range f.notes[*b.noteKey] {
			if n.ID == b.noteID && n.Body != b.noteBody {
				f.noteHook(*b.noteKey, n, "update")
			}
		}
	}
}
