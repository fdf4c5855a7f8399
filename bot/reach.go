package bot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// A forge that does not answer at the start does not stop the engine: the
// bot's identity on it is learnt in the background, with backoff, while its
// webhooks are accepted and journaled; its mailboxes' work waits for it, and
// its interrupted runs start again once it answers. The other forges work
// meanwhile.

// firstReach bounds the first asking of every forge at Start, asked all at
// once: a forge that answers within it is reached before Start returns.
const firstReach = 5 * time.Second

// maxReachBackoff bounds the wait between two askings of an unreachable forge.
const maxReachBackoff = 15 * time.Second

// ForgeReach is what the engine knows of one forge's reachability.
type ForgeReach struct {
	Name string
	// Login is the bot's login there; empty until the forge answered.
	Login string
	// Since is when the forge stopped answering (the start, when it never
	// did); zero while it answers.
	Since time.Time
	// Attempts counts the askings that failed since then.
	Attempts int
	// Err is the last failure, redacted.
	Err string
}

// Reachable tells whether the bot knows who it is on the forge.
func (r ForgeReach) Reachable() bool { return r.Login != "" }

// reaching is the reachability of every forge.
type reaching struct {
	mu     sync.Mutex
	forges map[string]*forgeReach
}

type forgeReach struct {
	ForgeReach
	ready chan struct{} // closed once Login is known
}

// startReaching asks every forge who the bot is, all at once, for at most
// firstReach; the forges that did not answer are asked again in the
// background until they do. It returns the forges reached.
func (e *Engine) startReaching(ctx context.Context) []string {
	e.reach.forges = make(map[string]*forgeReach, len(e.cfg.Forges))
	for name := range e.cfg.Forges {
		e.reach.forges[name] = &forgeReach{ForgeReach: ForgeReach{Name: name, Since: e.now()}, ready: make(chan struct{})}
	}
	names := slices.Sorted(maps.Keys(e.cfg.Forges))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, firstReach)
			defer cancel()
			errs[i] = e.askForge(actx, name)
		})
	}
	wg.Wait()
	var reached []string
	for i, name := range names {
		if errs[i] == nil {
			reached = append(reached, name)
			continue
		}
		e.runs.wg.Add(1)
		go e.keepReaching(name)
	}
	return reached
}

// askForge asks the forge who the bot is; it records the answer or the
// failure.
func (e *Engine) askForge(ctx context.Context, name string) error {
	me, err := e.cfg.Forges[name].Me(ctx)
	if err == nil && me.Login == "" {
		err = fmt.Errorf("the forge answered without a login for the bot's token")
	}
	e.reach.mu.Lock()
	defer e.reach.mu.Unlock()
	r := e.reach.forges[name]
	if err != nil {
		r.Attempts++
		r.Err = e.redact(err.Error())
		return fmt.Errorf("who is the bot on forge %s: %w", name, err)
	}
	r.Login, r.Since, r.Attempts, r.Err = me.Login, time.Time{}, 0, ""
	close(r.ready)
	return nil
}

// keepReaching asks an unreachable forge again, with backoff, until it
// answers or the engine closes; then it starts the forge's work.
func (e *Engine) keepReaching(name string) {
	defer e.runs.wg.Done()
	wait := e.cfg.RetryDelay
	for {
		st := e.reachOf(name)
		e.log.Warn("forge unreachable: its webhooks are journaled and its work waits", "forge", name,
			"since", st.Since, "attempts", st.Attempts, "next_in", wait, "err", st.Err)
		select {
		case <-e.ctx.Done():
			return
		case <-time.After(wait):
		}
		actx, cancel := context.WithTimeout(e.ctx, e.cfg.ForgeCallBudget)
		err := e.askForge(actx, name)
		cancel()
		if err == nil {
			break
		}
		wait = min(2*wait, maxReachBackoff)
	}
	e.log.Info("forge reached: its work starts", "forge", name, "bot", e.meOn(name), "down_for", e.now().Sub(e.reachOf(name).Since).Round(time.Second))
	if err := e.recoverRuns(e.ctx, name); err != nil {
		e.log.Error("restart the interrupted runs", "forge", name, "err", err)
	}
}

// reachOf is a copy of what the engine knows of the forge.
func (e *Engine) reachOf(name string) ForgeReach {
	e.reach.mu.Lock()
	defer e.reach.mu.Unlock()
	if r, ok := e.reach.forges[name]; ok {
		return r.ForgeReach
	}
	return ForgeReach{Name: name}
}

// Reach is what the engine knows of each forge's reachability, by name.
func (e *Engine) Reach() []ForgeReach {
	e.reach.mu.Lock()
	defer e.reach.mu.Unlock()
	out := make([]ForgeReach, 0, len(e.reach.forges))
	for _, name := range slices.Sorted(maps.Keys(e.reach.forges)) {
		out = append(out, e.reach.forges[name].ForgeReach)
	}
	return out
}

// meOn is the bot's login on the forge named forge ("" until it answered;
// the work of its mailboxes waits for that: awaitForge).
func (e *Engine) meOn(forge string) string {
	e.reach.mu.Lock()
	defer e.reach.mu.Unlock()
	if r, ok := e.reach.forges[forge]; ok {
		return r.Login
	}
	return ""
}

// awaitForge waits until the bot knows who it is on forge; false when ctx
// ends first. A forge the engine was not given needs no wait (the handling
// says it is not configured).
func (e *Engine) awaitForge(ctx context.Context, forge string) bool {
	e.reach.mu.Lock()
	r, ok := e.reach.forges[forge]
	e.reach.mu.Unlock()
	if !ok {
		return true
	}
	select {
	case <-r.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// forgeOf is the forge a message of the inbox key is about.
func forgeOf(key string, m message) string {
	if m.event != nil && m.event.Target.Project.Forge != "" {
		return m.event.Target.Project.Forge
	}
	f, _, _ := strings.Cut(strings.TrimPrefix(key, "project:"), "/")
	return f
}

// Note says, in one sentence for /readyz and the home page, that the forge
// does not answer and since when ("" while it does).
func (r ForgeReach) Note() string {
	if r.Reachable() {
		return ""
	}
	return fmt.Sprintf("forge %s unreachable since %s (%d attempts; its webhooks are journaled and its work waits): %s",
		r.Name, r.Since.UTC().Format(time.RFC3339), r.Attempts, r.Err)
}
