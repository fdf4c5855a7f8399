package views

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/state"
)

// Paging of the lists: ?limit= defaults to defaultLimit, at most maxLimit.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// errQuery is wrapped by the errors of a query string the lists refuse.
var errQuery = errors.New("bad query")

// listQuery is the filters and paging of the lists, as their query string
// carries them, so that a filtered view is a link to share:
// ?forge=&project=owner/name&status=&q=&phase=&adapter=&cursor=&limit=.
// status, phase and adapter take comma-separated values (any of them).
type listQuery struct {
	Forge   string
	Project string // owner/name; the owner may hold slashes (GitLab subgroups)
	Status  string
	Q       string
	Phase   string
	Adapter string
	Cursor  string
	Limit   int
}

func parseQuery(r *http.Request) (listQuery, error) {
	v := r.URL.Query()
	q := listQuery{Forge: v.Get("forge"), Project: strings.Trim(v.Get("project"), "/"), Status: v.Get("status"),
		Q: strings.TrimSpace(v.Get("q")), Phase: v.Get("phase"), Adapter: v.Get("adapter"), Cursor: v.Get("cursor"), Limit: defaultLimit}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return q, fmt.Errorf("%w: limit %q is not a whole number from 1 to %d", errQuery, s, maxLimit)
		}
		q.Limit = n
	}
	if q.Project != "" && !strings.Contains(q.Project, "/") {
		return q, fmt.Errorf("%w: project %q is not OWNER/NAME", errQuery, q.Project)
	}
	return q, nil
}

// owner splits Project at its last slash.
func (q listQuery) owner() (owner, name string) {
	i := strings.LastIndex(q.Project, "/")
	if i < 0 {
		return "", ""
	}
	return q.Project[:i], q.Project[i+1:]
}

// list splits a comma-separated value; empty gives nil (any).
func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (q listQuery) mailboxFilter(vis func(forge, owner, project string) bool) state.MailboxFilter {
	owner, name := q.owner()
	return state.MailboxFilter{Forge: q.Forge, Owner: owner, Project: name, Statuses: list(q.Status), Title: q.Q, Visible: vis}
}

func (q listQuery) runFilter(vis func(forge, owner, project string) bool) state.RunFilter {
	owner, name := q.owner()
	return state.RunFilter{Forge: q.Forge, Owner: owner, Project: name, Statuses: list(q.Status),
		Phases: list(q.Phase), Adapters: list(q.Adapter), Visible: vis}
}

// Filtered tells whether any filter is set.
func (q listQuery) Filtered() bool {
	return q.Forge != "" || q.Project != "" || q.Status != "" || q.Q != "" || q.Phase != "" || q.Adapter != ""
}

// Values is the query string of the filters (no paging), for links.
func (q listQuery) Values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"forge": q.Forge, "project": q.Project, "status": q.Status, "q": q.Q, "phase": q.Phase, "adapter": q.Adapter} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// Next is the link to the page after this one, keeping the filters.
func (q listQuery) Next(path, cursor string) string {
	if cursor == "" {
		return ""
	}
	v := q.Values()
	v.Set("cursor", cursor)
	if q.Limit != defaultLimit {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return path + "?" + v.Encode()
}

// badQuery answers 400 for a query string (or cursor) the lists refuse.
func (d Deps) badQuery(w http.ResponseWriter, r *http.Request, err error) {
	d.Logger.Info("list query refused", "path", r.URL.Path, "err", err)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": err.Error()})
		return
	}
	http.Error(w, err.Error(), http.StatusBadRequest)
}

// listError answers a failed list query: 400 for a bad cursor, else 500.
func (d Deps) listError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, state.ErrBadCursor) {
		d.badQuery(w, r, err)
		return
	}
	d.Logger.Error("list query", "path", r.URL.Path, "err", err)
	http.Error(w, "the records could not be read", http.StatusInternalServerError)
}
