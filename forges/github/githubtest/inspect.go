package githubtest

import (
	"slices"

	"github.com/alchemic-studio/alfred/forges"
)

// Requests is the number of API requests the fake has received, failed and
// hung ones included.
func (f *Server) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// IssueBody is the stored body of issue or pull request number.
func (f *Server) IssueBody(number int64) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[number]
	if is == nil {
		return "", false
	}
	return is.body, true
}

// TargetLabels are the label names on an issue or pull request.
func (f *Server) TargetLabels(tg forges.Target) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[tg.Number]
	if is == nil {
		return nil, false
	}
	return slices.Clone(is.labels), true
}

// Labels are the repository's label definitions, colours as stored (six
// lower-case hex digits).
func (f *Server) Labels() []forges.Label {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]forges.Label, 0, len(f.labels))
	for _, l := range f.labels {
		out = append(out, *l)
	}
	return out
}
