package githubtest

import (
	"net/http"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// handler answers one API request, with mu held; v holds its path's wildcards.
type handler func(f *Server, r *http.Request, v fakeforge.PathValues) reply

// apiRoute is one entry of the dispatch table.
type apiRoute struct {
	pattern fakeforge.Pattern
	handle  handler
}

func handle(p string, h handler) apiRoute { return apiRoute{fakeforge.ParsePattern(p), h} }

// apiRoutes are the API's routes after admit (the App's endpoints are in
// app.go), in the order they are tried. A route under
// /repos/{owner}/{repo} answers 404 for any repository but the fake's.
var apiRoutes = []apiRoute{
	handle("GET /user", (*Server).getUser),
	handle("GET /repos/{owner}/{repo}", (*Server).getRepo),
	handle("GET /repos/{owner}/{repo}/collaborators/{username}/permission", (*Server).permission),
	handle("GET /repos/{owner}/{repo}/branches/{branch}", (*Server).branch),
	handle("GET /repos/{owner}/{repo}/labels", (*Server).listLabels),
	handle("POST /repos/{owner}/{repo}/labels", (*Server).createLabel),
	handle("PATCH /repos/{owner}/{repo}/labels/{name}", (*Server).updateLabel),
	handle("GET /repos/{owner}/{repo}/issues/{issue_number}", onIssue((*Server).getIssue)),
	handle("PATCH /repos/{owner}/{repo}/issues/{issue_number}", onIssue((*Server).editIssue)),
	handle("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", (*Server).editComment),
	handle("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", onIssue((*Server).listComments)),
	handle("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", onIssue((*Server).createComment)),
	handle("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", onIssue((*Server).addLabels)),
	handle("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", (*Server).removeIssueLabel),
	handle("GET /repos/{owner}/{repo}/pulls", (*Server).listPulls),
	handle("POST /repos/{owner}/{repo}/pulls", (*Server).createPull),
	handle("GET /repos/{owner}/{repo}/pulls/{pull_number}", onPull((*Server).getPull)),
	handle("GET /repos/{owner}/{repo}/pulls/{pull_number}/comments", onPull((*Server).listReviewComments)),
	handle("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", onPull((*Server).listReviews)),
	handle("GET /repos/{owner}/{repo}/commits/{ref}/status", (*Server).combinedStatus),
	handle("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", (*Server).checkRuns),
}

// route dispatches on the path's segments, each unescaped on its own, so
// that branch and label names with '/' or ':' stay one segment.
func (f *Server) route(r *http.Request) reply {
	seg, rep, done := f.admit(r)
	if done {
		return rep
	}
	for _, rt := range apiRoutes {
		v, found := rt.pattern.Match(r.Method, seg)
		switch {
		case !found:
			continue
		case !f.ours(v):
			return notFound
		}
		return rt.handle(f, r, v)
	}
	return notFound
}

// ours tells whether a route's {owner} and {repo}, if it has them, are the
// fake's repository.
func (f *Server) ours(v fakeforge.PathValues) bool {
	owner, underRepos := v["owner"]
	return !underRepos || owner == f.owner && v["repo"] == f.repo
}

// onIssue is a handler of the issue (or pull request) {issue_number}, 404
// when there is none.
func onIssue(h func(f *Server, r *http.Request, is *fakeIssue) reply) handler {
	return func(f *Server, r *http.Request, v fakeforge.PathValues) reply {
		return f.withIssue(v["issue_number"], func(is *fakeIssue) reply { return h(f, r, is) })
	}
}

// onPull is a handler of the pull request {pull_number}, 404 when there is
// none or it is an issue.
func onPull(h func(f *Server, r *http.Request, is *fakeIssue) reply) handler {
	return func(f *Server, r *http.Request, v fakeforge.PathValues) reply {
		return f.withPull(v["pull_number"], func(is *fakeIssue) reply { return h(f, r, is) })
	}
}

func (f *Server) getUser(*http.Request, fakeforge.PathValues) reply {
	if f.caller != f.bot {
		return errReply(http.StatusForbidden, "Resource not accessible by integration")
	}
	return ok(f.userJSON(f.bot))
}

func (f *Server) getRepo(*http.Request, fakeforge.PathValues) reply { return ok(f.repoJSON()) }

func (f *Server) listLabels(r *http.Request, _ fakeforge.PathValues) reply {
	return f.page(r, f.labelsJSON())
}

func (f *Server) getIssue(_ *http.Request, is *fakeIssue) reply { return ok(f.issueJSON(is)) }

func (f *Server) getPull(_ *http.Request, is *fakeIssue) reply { return ok(f.pullJSON(is)) }

func (f *Server) removeIssueLabel(_ *http.Request, v fakeforge.PathValues) reply {
	return f.withIssue(v["issue_number"], func(is *fakeIssue) reply { return f.removeLabel(is, v["name"]) })
}
