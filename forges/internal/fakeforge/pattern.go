package fakeforge

import "strings"

// The fakes dispatch with tables of routes, each a method and a path
// pattern in the syntax of http.ServeMux's patterns, such as "GET
// /repos/{owner}/{repo}/issues/{index}" (no method: any method), and the
// handler that answers them. A pattern is matched against the path's
// segments as the fake splits them, each unescaped on its own, so that an
// escaped '/' (GitLab's acme%2Fplatform%2Fdemo, a branch "feature%2Fx")
// stays one segment. A {name} wildcard matches any one segment; a last
// {name...} matches the remaining ones (at least one), joined with '/'.
// Unlike http.ServeMux, the first route that matches wins, GET does not
// match HEAD, and no path is cleaned or redirected.

// PathValues are the values of a matched pattern's wildcards, by name; a
// name the pattern lacks reads "".
type PathValues map[string]string

// Pattern is a parsed route pattern.
type Pattern struct {
	method string   // "" for any method
	segs   []string // literal segments and wildcards
}

// ParsePattern parses "METHOD /path" or "/path".
func ParsePattern(s string) Pattern {
	method, path, found := strings.Cut(s, " ")
	if !found {
		method, path = "", s
	}
	return Pattern{method: method, segs: strings.Split(strings.TrimPrefix(path, "/"), "/")}
}

// Match reports whether a request with method for the path's segments seg
// matches p, and the values of p's wildcards.
func (p Pattern) Match(method string, seg []string) (PathValues, bool) {
	if p.method != "" && p.method != method {
		return nil, false
	}
	v := PathValues{}
	for i, ps := range p.segs {
		if i >= len(seg) {
			return nil, false
		}
		name, wild := wildcard(ps)
		if rest, ok := strings.CutSuffix(name, "..."); wild && ok {
			v[rest] = strings.Join(seg[i:], "/")
			return v, true
		}
		switch {
		case wild:
			v[name] = seg[i]
		case ps != seg[i]:
			return nil, false
		}
	}
	return v, len(seg) == len(p.segs)
}

// wildcard is the name in a pattern segment "{name}", if it is one.
func wildcard(s string) (string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return "", false
	}
	return s[1 : len(s)-1], true
}
