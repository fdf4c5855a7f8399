package views

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// permTTL is how long a person's permission on a project is trusted before
// the forge is asked again: the lists ask for every project they show, on
// every page, and a change of access shows within a minute.
const permTTL = time.Minute

// permCacheMax bounds the cache; past it the expired entries are dropped.
const permCacheMax = 4096

type permKey struct {
	login   string
	project forges.Project
}

type permEntry struct {
	perm forges.Permission
	at   time.Time
}

// permCache remembers what a login may do on a project for permTTL. Errors
// are not remembered: the next request asks again.
type permCache struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	m   map[permKey]permEntry
}

func newPermCache(now func() time.Time) *permCache {
	if now == nil {
		now = time.Now
	}
	return &permCache{ttl: permTTL, now: now, m: map[permKey]permEntry{}}
}

// permission returns login's permission on p, from the cache while fresh,
// else from ask.
func (c *permCache) permission(ctx context.Context, login string, p forges.Project,
	ask func(context.Context, forges.Project, string) (forges.Permission, error)) (forges.Permission, error) {
	k := permKey{login: login, project: p}
	c.mu.Lock()
	e, ok := c.m[k]
	now := c.now()
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.perm, nil
	}
	perm, err := ask(ctx, p, login)
	if err != nil {
		return forges.PermissionNone, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= permCacheMax {
		c.sweep(now)
	}
	c.m[k] = permEntry{perm: perm, at: now}
	return perm, nil
}

// sweep drops the expired entries, and everything if none had expired.
func (c *permCache) sweep(now time.Time) {
	for k, e := range c.m {
		if now.Sub(e.at) >= c.ttl {
			delete(c.m, k)
		}
	}
	if len(c.m) >= permCacheMax {
		clear(c.m)
	}
}

// visible is the access check of the lists, for the state store's filters:
// nil (every project) without access control; else the public projects and,
// for a signed-in person, the projects each forge they signed in on lets
// them read.
func (d Deps) visible(r *http.Request) func(forge, owner, project string) bool {
	a := d.Access
	if a == nil {
		return nil
	}
	logins := a.logins(r)
	return func(forge, owner, project string) bool {
		p := forges.Project{Forge: forge, Owner: owner, Name: project}
		if a.Public != nil && a.Public(p) {
			return true
		}
		who := logins[forge] // the person's login on the project's forge
		if who == "" || a.Permission == nil {
			return false
		}
		perm, err := d.permissions().permission(r.Context(), who, p, a.Permission)
		if err != nil {
			d.Logger.Warn("list access check", "login", who, "project", p.FullName(), "err", err)
			return false
		}
		return perm >= forges.PermissionRead
	}
}

// canSee applies visible to one project.
func canSee(vis func(forge, owner, project string) bool, forge, owner, project string) bool {
	return vis == nil || vis(forge, owner, project)
}

// permissions is the cache Register made; a Deps that was not registered
// (a handler called directly) asks the forge every time.
func (d Deps) permissions() *permCache {
	if d.perms != nil {
		return d.perms
	}
	c := newPermCache(d.Clock)
	c.ttl = 0
	return c
}
