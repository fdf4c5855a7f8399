package gitlabtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// input is what a handler reads of its request besides r: its path's
// wildcards and, for a POST or PUT under the project, its JSON body.
type input struct {
	path fakeforge.PathValues
	body map[string]any
}

// handler answers one API request, with mu held.
type handler func(f *Server, w http.ResponseWriter, r *http.Request, in input)

// apiRoute is one entry of the dispatch table.
type apiRoute struct {
	pattern fakeforge.Pattern
	handle  handler
}

func handle(p string, h handler) apiRoute { return apiRoute{fakeforge.ParsePattern(p), h} }

// apiRoutes are the API's routes after inspect, in the order they are tried.
var apiRoutes = []apiRoute{
	handle("GET /user", (*Server).getUser),
	handle("GET /users", (*Server).listUsers),
	handle("GET /projects/{id}", (*Server).getProject),
	handle("GET /projects/{id}/members/all/{user_id}", (*Server).member),
	handle("GET /projects/{id}/repository/branches/{branch}", (*Server).branch),
	handle("GET /projects/{id}/repository/commits/{sha}/statuses", (*Server).listStatuses),
	handle("GET /projects/{id}/pipelines", (*Server).listPipelines),
	handle("GET /projects/{id}/labels", (*Server).listLabels),
	handle("POST /projects/{id}/labels", (*Server).createLabel),
	handle("PUT /projects/{id}/labels/{name}", (*Server).updateLabel),
	handle("GET /projects/{id}/issues/{iid}", (*Server).getIssue),
	handle("PUT /projects/{id}/issues/{iid}", (*Server).putIssue),
	handle("GET /projects/{id}/merge_requests", (*Server).listMRs),
	handle("POST /projects/{id}/merge_requests", (*Server).createMR),
	handle("GET /projects/{id}/merge_requests/{iid}", (*Server).getMR),
	handle("PUT /projects/{id}/merge_requests/{iid}", (*Server).putMR),
	handle("GET /projects/{id}/merge_requests/{iid}/discussions", (*Server).listMRDiscussions),
	handle("GET /projects/{id}/issues/{iid}/notes", onNotes("issues", (*Server).listNotes)),
	handle("POST /projects/{id}/issues/{iid}/notes", onNotes("issues", (*Server).createNote)),
	handle("GET /projects/{id}/merge_requests/{iid}/notes", onNotes("merge_requests", (*Server).listNotes)),
	handle("POST /projects/{id}/merge_requests/{iid}/notes", onNotes("merge_requests", (*Server).createNote)),
	handle("PUT /projects/{id}/issues/{iid}/notes/{note_id}", onNotes("issues", (*Server).updateNote)),
	handle("PUT /projects/{id}/merge_requests/{iid}/notes/{note_id}", onNotes("merge_requests", (*Server).updateNote)),
}

// route answers a request for seg, the path's segments under /api/v4/,
// each unescaped. A path under /projects/{id} that is not the fake's
// project is a 404; a POST or PUT there has its body read as JSON, a 400
// when it is not, before any route is looked for.
func (f *Server) route(w http.ResponseWriter, r *http.Request, seg []string) {
	if f.inspect(w, r, seg) {
		return
	}
	var in input
	if len(seg) >= 2 && seg[0] == "projects" {
		if seg[1] != f.path && seg[1] != strconv.FormatInt(f.project, 10) {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
			return
		}
		var ok bool
		if in.body, ok = readBody(w, r); !ok {
			return
		}
	}
	for _, rt := range apiRoutes {
		if v, found := rt.pattern.Match(r.Method, seg); found {
			in.path = v
			rt.handle(f, w, r, in)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
}

// readBody decodes the JSON body of a POST or PUT; it answers 400 and
// reports false when the body is not JSON.
func readBody(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return nil, true
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "body is not JSON: " + err.Error()})
		return nil, false
	}
	return body, true
}

// onNotes is a handler of the notes of the issue or merge request (kind,
// as in the path) {iid}, 404 when there is none.
func onNotes(kind string, h func(f *Server, w http.ResponseWriter, r *http.Request, key noteKey, in input)) handler {
	return func(f *Server, w http.ResponseWriter, r *http.Request, in input) {
		if key, ok := f.noteTarget(w, kind, in.path["iid"]); ok {
			h(f, w, r, key, in)
		}
	}
}

func (f *Server) getUser(w http.ResponseWriter, _ *http.Request, _ input) {
	writeJSON(w, http.StatusOK, f.userJSON(f.users[f.bot]))
}

func (f *Server) listUsers(w http.ResponseWriter, r *http.Request, _ input) {
	var out []any
	if u, ok := f.users[r.URL.Query().Get("username")]; ok {
		out = append(out, f.userJSON(u))
	}
	f.page(w, r, out)
}

func (f *Server) getProject(w http.ResponseWriter, _ *http.Request, _ input) {
	writeJSON(w, http.StatusOK, f.projectJSON())
}

func (f *Server) listLabels(w http.ResponseWriter, r *http.Request, _ input) {
	out := make([]any, 0, len(f.labels))
	for _, l := range f.labels {
		out = append(out, labelJSON(l))
	}
	f.page(w, r, out)
}

func (f *Server) getIssue(w http.ResponseWriter, _ *http.Request, in input) {
	if is := f.issueByPath(w, in.path["iid"]); is != nil {
		writeJSON(w, http.StatusOK, f.issueJSON(is))
	}
}

func (f *Server) putIssue(w http.ResponseWriter, _ *http.Request, in input) {
	if is := f.issueByPath(w, in.path["iid"]); is != nil {
		f.updateIssue(is, in.body)
		writeJSON(w, http.StatusOK, f.issueJSON(is))
	}
}

func (f *Server) getMR(w http.ResponseWriter, _ *http.Request, in input) {
	if mr := f.mrByPath(w, in.path["iid"]); mr != nil {
		writeJSON(w, http.StatusOK, f.mrJSON(mr))
	}
}

func (f *Server) putMR(w http.ResponseWriter, _ *http.Request, in input) {
	if mr := f.mrByPath(w, in.path["iid"]); mr != nil {
		f.updateMR(mr, in.body)
		writeJSON(w, http.StatusOK, f.mrJSON(mr))
	}
}

func (f *Server) listMRDiscussions(w http.ResponseWriter, r *http.Request, in input) {
	if mr := f.mrByPath(w, in.path["iid"]); mr != nil {
		f.listDiscussions(w, r, noteKey{"merge_requests", mr.IID})
	}
}

// createNote answers POST .../notes: a note by the bot, 400 without a body.
func (f *Server) createNote(w http.ResponseWriter, _ *http.Request, key noteKey, in input) {
	text, _ := in.body["body"].(string)
	if text == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "400 Bad request - Note {:note=>[\"can't be blank\"]}"})
		return
	}
	n := f.addNote(key, f.bot, text, "", time.Time{})
	writeJSON(w, http.StatusCreated, f.noteJSON(key, n))
}

// updateNote answers PUT .../notes/{note_id}, changing its body if given.
func (f *Server) updateNote(w http.ResponseWriter, _ *http.Request, key noteKey, in input) {
	id, _ := strconv.ParseInt(in.path["note_id"], 10, 64)
	for _, n := range f.notes[key] {
		if n.ID == id {
			if text, ok := in.body["body"].(string); ok {
				n.Body, n.UpdatedAt = text, f.tick()
			}
			writeJSON(w, http.StatusOK, f.noteJSON(key, n))
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Note Not Found"})
}
