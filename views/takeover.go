package views

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/state"
)

// Takeover hands an agent's session over to a person (package takeover,
// wired by the main package): the run page's "continue this session
// yourself", for people with write access to the project only.
type Takeover interface {
	// Offer is what the run page shows of the session of adapterID on mb:
	// the archive's file name and the command that resumes it; false when
	// there is none to take over (no session kept, a CLI that keeps none).
	Offer(mb state.Mailbox, adapterID string) (TakeoverOffer, bool)
	// Write writes the archive of that session to w; an error before the
	// first byte leaves w untouched.
	Write(ctx context.Context, w io.Writer, mb state.Mailbox, adapterID string) error
}

// TakeoverOffer is a session a person may take over.
type TakeoverOffer struct {
	File    string // the archive's file name
	Command string // the exact command that resumes it, run beside the archive
	Note    string // what to know beside the command; may be empty
	URL     string // where the archive downloads (set by the page)
}

// takeoverPath is the archive's download on the page of run id.
func takeoverPath(runID string) string { return "/runs/" + runID + "/session.tar.gz" }

// mayWrite tells whether the request comes from someone with write access
// to p. With sign-in configured: a person signed in on p's forge whom the
// forge gives write access, asked afresh (a session folder is the agent's
// whole conversation). Without: a request from this host only, made to the
// listener directly, as for /config.
func (d Deps) mayWrite(r *http.Request, p forges.Project) bool {
	a := d.Access
	if a == nil || len(a.SignIns) == 0 {
		return directLoopback(r)
	}
	who := a.logins(r)[p.Forge]
	if who == "" || a.Permission == nil {
		return false
	}
	perm, err := a.Permission(r.Context(), p, who)
	if err != nil {
		d.Logger.Warn("write access check", "login", who, "project", p.FullName(), "err", err)
		return false
	}
	return perm >= forges.PermissionWrite
}

// takeoverOf is the offer the run page shows, nil for a visitor without
// write access or a run whose session cannot be taken over.
func (d Deps) takeoverOf(r *http.Request, v *runView) *TakeoverOffer {
	if d.Takeover == nil || v.Mailbox.Kind != state.KindIssue || !d.mayWrite(r, projectOfKey(v.Mailbox.Key())) {
		return nil
	}
	o, ok := d.Takeover.Offer(v.Mailbox, v.Run.AdapterID)
	if !ok {
		return nil
	}
	o.URL = takeoverPath(v.Run.ID)
	return &o
}

// takeoverDownload is GET /runs/{id}/session.tar.gz: the archive of the
// session of the run's adapter on its mailbox, for people with write
// access; anyone else gets the answer of a run that does not exist.
func (d Deps) takeoverDownload(w http.ResponseWriter, r *http.Request) {
	v, ok := readable(d, w, r, d.locateRun)
	if !ok {
		return
	}
	p := projectOfKey(v.Mailbox.Key())
	if d.Takeover == nil || !d.mayWrite(r, p) {
		d.Logger.Info("session download refused", "run", v.Run.ID, "why", "no write access")
		d.hidden(w, r)
		return
	}
	o, ok := d.Takeover.Offer(v.Mailbox, v.Run.AdapterID)
	if !ok {
		d.notFound(w, r, errors.New("no session to take over"))
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": o.File}))
	w.Header().Set("Cache-Control", "no-store")
	d.Logger.Info("session taken over", "run", v.Run.ID, "mailbox", v.Mailbox.ID, "adapter", v.Run.AdapterID, "by", d.who(r))
	out := &counted{w: w}
	if err := d.Takeover.Write(r.Context(), out, v.Mailbox, v.Run.AdapterID); err != nil {
		msg := redact.Secrets(err.Error(), d.Secrets)
		d.Logger.Error("session archive", "run", v.Run.ID, "err", msg)
		if out.n == 0 { // else the archive is cut short, which its reader sees
			w.Header().Del("Content-Disposition")
			http.Error(w, "the session could not be exported: "+msg, http.StatusInternalServerError)
		}
	}
}

// who is the request's login for the log, "" for nobody.
func (d Deps) who(r *http.Request) string {
	if d.Access == nil {
		return ""
	}
	return d.Access.login(r)
}

// counted counts the bytes written through it.
type counted struct {
	w io.Writer
	n int64
}

func (c *counted) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
