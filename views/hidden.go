package views

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// What a visitor may not see is answered as what does not exist. A page,
// live stream or JSON answer about a run, a mailbox (its session view too)
// or a project decides access from the record's project (forge, owner,
// name) before it loads or tells anything of the record: from the path for
// a mailbox or a project, from the run's record for a run (a run id tells
// nothing else). A missing record, an unreadable one, one on a project the
// visitor may not read (anonymous, or signed in without read access), and
// /config for someone who is not an admin all get hidden's answer: 404 with
// the same headers and body, which depend only on the request's path and
// on whether sign-in is configured, never on the record or on who asks.

// hidden answers 404. Pages get a "not found" page that, when sign-in is
// configured, offers it (the visitor may have to sign in, or sign in on
// another forge); the JSON API gets {"error": "not found"} and, when
// sign-in is configured, "sign_in", the address to sign in at.
func (d Deps) hidden(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.RequestURI())
	forges := d.signInForges()
	var body []byte
	h := w.Header()
	if strings.HasPrefix(r.URL.Path, "/api/") {
		answer := map[string]string{"error": "not found"}
		if len(forges) > 0 {
			answer["sign_in"] = "/login?next=" + url.QueryEscape(next)
		}
		body, _ = json.Marshal(answer) // a map of strings always encodes
		body = append(body, '\n')
		h.Set("Content-Type", "application/json")
	} else {
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, "signin.html", map[string]any{"NotFound": true, "Next": next, "Forges": forges}); err != nil {
			d.Logger.Error("render page", "template", "signin.html", "err", err)
			b.Reset()
			b.WriteString("not found\n")
		}
		body = b.Bytes()
		h.Set("Content-Type", "text/html; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	w.Write(body)
}

// signInForges are the forges people can sign in with, in order; none
// without access control or sign-in.
func (d Deps) signInForges() []string {
	if d.Access == nil {
		return nil
	}
	var out []string
	for _, s := range d.Access.SignIns {
		out = append(out, s.Forge)
	}
	return out
}
