package state

import "slices"

// A route may be claimed by more than one mailbox (two issues whose
// branches stand at one commit, say). It names the claimant of the
// greatest path, whatever the order the claims came in: a full load, an
// open from the checkpoint and a store that wrote them all route alike.
// routes holds the claimant memory routes to; routeClaims the others
// memory holds (rare), so that the next one takes over when it goes.

// claimRoute records that the mailbox at path claims rt.
func (s *snapshot) claimRoute(rt Route, path string) {
	cur, ok := s.routes[rt]
	switch {
	case !ok:
		s.routes[rt] = path
	case cur == path || slices.Contains(s.routeClaims[rt], path):
	case path > cur:
		s.routes[rt] = path
		s.routeClaims[rt] = append(s.routeClaims[rt], cur)
	default:
		s.routeClaims[rt] = append(s.routeClaims[rt], path)
	}
}

// unclaimRoute takes the claim of the mailbox at path on rt away.
func (s *snapshot) unclaimRoute(rt Route, path string) {
	others := s.routeClaims[rt]
	if s.routes[rt] != path {
		if i := slices.Index(others, path); i >= 0 {
			s.setClaims(rt, slices.Delete(others, i, i+1))
		}
		return
	}
	if len(others) == 0 {
		delete(s.routes, rt)
		return
	}
	i := 0
	for j, p := range others {
		if p > others[i] {
			i = j
		}
	}
	s.routes[rt] = others[i]
	s.setClaims(rt, slices.Delete(others, i, i+1))
}

func (s *snapshot) setClaims(rt Route, others []string) {
	if len(others) == 0 {
		delete(s.routeClaims, rt)
		return
	}
	s.routeClaims[rt] = others
}

// routed returns the path of the mailbox rt names: of its claimants in
// memory and in the cold file (those made warm left out), the greatest.
func (s *snapshot) routed(rt Route) (string, bool) {
	p, ok := s.routes[rt]
	if s.cold == nil {
		return p, ok
	}
	for c, err := range s.cold.file.claims(rt) {
		if err != nil {
			break // the claims the file can give
		}
		if c > p && !s.cold.warm[mailboxDirOf(c)] {
			p, ok = c, true
		}
	}
	return p, ok
}
