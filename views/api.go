package views

import (
	"fmt"
	"net/http"
)

// page is the answer of the JSON lists: the items of one page, and the
// cursor of the next ("" on the last page).
type page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

// mailboxList reads one page of mailboxes under q and vis, most recently
// updated first.
func (d Deps) mailboxList(q listQuery, vis func(forge, owner, project string) bool) ([]mailboxItem, string, error) {
	rows, next, err := d.Records.ListMailboxes(q.mailboxFilter(vis), q.Cursor, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list mailboxes: %w", err)
	}
	now := d.now()
	items := make([]mailboxItem, 0, len(rows))
	for _, row := range rows {
		items = append(items, d.mailboxItem(row, now))
	}
	return items, next, nil
}

// mailboxesJSON is /api/mailboxes: ?forge=&project=&status=&q=&cursor=&limit=.
func (d Deps) mailboxesJSON(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		d.badQuery(w, r, err)
		return
	}
	items, next, err := d.mailboxList(q, d.visible(r))
	if err != nil {
		d.listError(w, r, err)
		return
	}
	writeJSON(w, page[mailboxItem]{Items: items, Next: next})
}

// runsJSON is /api/runs: ?forge=&project=&status=&phase=&adapter=&cursor=&limit=.
func (d Deps) runsJSON(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		d.badQuery(w, r, err)
		return
	}
	items, next, err := d.runList(q, d.visible(r))
	if err != nil {
		d.listError(w, r, err)
		return
	}
	writeJSON(w, page[runItem]{Items: items, Next: next})
}
