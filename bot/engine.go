package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// Config is what the engine is built from. main.go fills it.
type Config struct {
	// Forges are the forges the engine works on, by name: the Project.Forge
	// of their events and the Forge of their mailboxes and records.
	Forges map[string]forges.Forge
	Store  *state.Store
	// Adapters by id; the AGENT_ADAPTER setting picks one per project.
	Adapters map[string]agents.Adapter
	// Runner runs local agents; RunnerName is "image" or "host".
	Runner sandbox.Runner
	// Sandbox is the base of every run's spec: image, uid:gid, limits, and
	// the environment offered to adapters (API keys, base URLs).
	Sandbox sandbox.Spec
	// Repos keeps the project clones and run working copies.
	Repos *botrun.Repos
	// Journal is the file of the durable intake queue; default
	// {Repos.Base}/events.journal.
	Journal string
	// Sessions is the base of the per-mailbox agent session state.
	Sessions botrun.SessionStore
	// PublicURL prefixes the run page links in comments.
	PublicURL string
	// Secrets are more values to hide from what the engine records and
	// publishes (an API key, the webhook secrets), beside the forge token
	// and the secret-named variables of Sandbox.Env, which it always hides.
	Secrets []string
	// MaxParallelRuns bounds the runs executing at once (default 2).
	MaxParallelRuns int
	// RetryDelay is the first wait before handling a failed event again
	// (doubling each time, up to 60 times itself); default 1s. Only failures
	// outside the forge are tried again so (the state store, git, a panic):
	// a forge call is retried by the forge client alone, within its budget.
	RetryDelay time.Duration
	// ForgeCallBudget is the forge client's budget of one call, for the
	// sentence that says the forge did not answer (default 1 minute).
	ForgeCallBudget time.Duration
	// EventBudget bounds the handling of one event, every try included
	// (default 5 minutes): a forge that hangs frees the worker after it.
	EventBudget time.Duration
	// StatusPrefixes are the status labels' prefix on each forge, by name
	// (forges.StatusPrefixOf); a forge missing has "status::".
	StatusPrefixes map[string]string
	// Defaults replace setting defaults of the catalogue (see Settings.Defaults).
	Defaults map[string]string
	// PollInterval is how often open merge requests are polled for CI and
	// mergeability (0: never; Forgejo sends no commit-status webhook).
	PollInterval time.Duration
	// Detected, when set, is closed once the first detection of the agent
	// CLIs has ended: runs wait for it (at most DetectionWait after Start),
	// so that the first run of an issue already knows whether it may resume.
	Detected <-chan struct{}
	// DetectionWait bounds that wait; default 2 minutes.
	DetectionWait time.Duration
	// Seal, when set, seals the runs that can be behind the model gateway
	// (bot/run/seal.go); nil: no run is sealed.
	Seal *botrun.Seal
	// Metrics counts runs, sessions, panics and quarantined events (nil:
	// nothing is counted).
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Engine turns forge events into mailbox changes, comments, labels and runs.
// Its way for one event: Intake records it and posts it to the mailbox's
// inbox; the mailbox's worker classifies it (Classify), acts on the forge
// and the store (handle*.go), and may start a run (execute.go, carried out
// by bot/run), whose end comes back to the same inbox.
type Engine struct {
	cfg      Config
	store    *state.Store
	settings Settings
	log      *slog.Logger
	now      func() time.Time
	reach    reaching // the bot's login on each forge, learnt at Start or later (reach.go)

	inbox  *inbox     // the mailbox workers: one at a time per mailbox
	events intake     // the journal, the redelivery filter, the event records
	runs   registry   // the runs launched and not ended
	runner runner     // carries out each run (bot/run)
	trials trialTally // the agent trial's arms chosen (trial.go)
	cancel context.CancelFunc
	ctx    context.Context
	// detectBy is when runs stop waiting for the first detection.
	detectBy time.Time

	closeOnce sync.Once

	// beforeEvent, set by tests, runs at the start of each event's handling
	// (to inject a panic).
	beforeEvent func(*forges.Event)
	// stepped, set by tests, learns each transition taken (lifecycle/table.go).
	stepped func(lifecycle.Step)
}

// New checks the configuration and builds an engine. Call Start to run it.
func New(cfg Config) (*Engine, error) {
	switch {
	case len(cfg.Forges) == 0:
		return nil, errors.New("engine: no forge")
	case cfg.Store == nil:
		return nil, errors.New("engine: no state store")
	case cfg.Repos == nil:
		return nil, errors.New("engine: no repositories folder")
	case cfg.Runner == nil:
		return nil, errors.New("engine: no runner")
	}
	if err := (Settings{Defaults: cfg.Defaults}).CheckDefaults(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if cfg.MaxParallelRuns <= 0 {
		cfg.MaxParallelRuns = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Journal == "" {
		cfg.Journal = filepath.Join(cfg.Repos.Base, "events.journal")
	}
	if cfg.DetectionWait <= 0 {
		cfg.DetectionWait = 2 * time.Minute
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.ForgeCallBudget <= 0 {
		cfg.ForgeCallBudget = forges.DefaultCallBudget
	}
	if cfg.EventBudget <= 0 {
		cfg.EventBudget = 5 * time.Minute
	}
	e := &Engine{
		cfg:      cfg,
		store:    cfg.Store,
		settings: engineSettings(cfg),
		log:      cfg.Logger,
		now:      cfg.Now,
		events:   intake{seen: map[string]time.Time{}},
		runs:     registry{slots: make(chan struct{}, cfg.MaxParallelRuns), running: map[string]*liveRun{}},
	}
	e.runner = &botrun.Runner{
		Sandbox: cfg.Runner, Spec: cfg.Sandbox, Repos: cfg.Repos, Sessions: cfg.Sessions, Sealing: cfg.Seal,
		Store: cfg.Store, Secrets: e.secrets, Detection: e.awaitDetection,
		Stopping: func() bool { return e.ctx.Err() != nil },
		Log:      cfg.Logger, Now: cfg.Now,
	}
	return e, nil
}

// runner carries out one run (bot/run.Runner): the engine hands it the
// run's Request and records and decides from what it fills and reports.
type runner interface {
	Run(ctx context.Context, req botrun.Request) (botrun.Report, error)
}

// Start learns who the bot is on each forge, picks up the work a previous
// process left (pending events, interrupted runs) and starts polling. A
// forge that does not answer stops nothing: it is asked again in the
// background, and its work starts once it answers (reach.go).
func (e *Engine) Start(ctx context.Context) error {
	e.detectBy = time.Now().Add(e.cfg.DetectionWait)
	j, journaled, err := openJournal(e.cfg.Journal)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.events.journal = j
	e.ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))
	reached := e.startReaching(ctx)
	e.inbox = newInbox(e.ctx, e.handle)
	e.events.flushNow, e.events.stopFlush, e.events.flushed = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go e.flushLoop()
	e.recoverEvents(journaled)
	if err := e.pruneEvents(ctx); err != nil {
		return err
	}
	if err := e.recoverRuns(ctx, reached...); err != nil {
		return err
	}
	if e.cfg.PollInterval > 0 {
		e.runs.wg.Add(1)
		go e.pollLoop()
	}
	e.log.Info("engine started", "bot", e.Reach(), "forges", slices.Sorted(maps.Keys(e.cfg.Forges)), "runner", e.cfg.Runner.Name())
	return nil
}

// Close stops taking events, cancels the runs in flight (their containers are
// killed and removed; they are started again at the next Start) and waits.
func (e *Engine) Close() {
	if e.inbox == nil {
		return
	}
	e.closeOnce.Do(e.close)
}

func (e *Engine) close() {
	e.cancel()
	e.inbox.close()
	e.runs.wg.Wait()
	close(e.events.stopFlush)
	<-e.events.flushed
	if err := e.events.journal.close(); err != nil {
		e.log.Warn("close the event journal", "err", err)
	}
}

// RunsInFlight is the number of runs launched and not ended.
func (e *Engine) RunsInFlight() int {
	e.runs.mu.Lock()
	defer e.runs.mu.Unlock()
	return len(e.runs.running)
}

// on is the client of the forge named forge. The events and mailboxes the
// engine handles name a configured one (checked as they come in: known).
func (e *Engine) on(forge string) forges.Forge { return e.cfg.Forges[forge] }

// known fails for a forge the engine was not given: a mailbox of a forge
// removed from the configuration.
func (e *Engine) known(forge string) error {
	if _, ok := e.cfg.Forges[forge]; !ok {
		return fmt.Errorf("forge %q is not configured: add it back, or close its mailboxes by hand", forge)
	}
	return nil
}

// handle is the worker of one mailbox: it handles m with nothing else of the
// same mailbox running at the same time.
func (e *Engine) handle(ctx context.Context, key string, m message) {
	if !e.awaitForge(ctx, forgeOf(key, m)) {
		return // closing: a journaled event is handled at the next start
	}
	switch {
	case m.event != nil && m.routeErr != nil:
		// Where it belongs is unknown, and trying again cannot tell (postEvent).
		e.quarantine(ctx, key, m, m.routeErr)
		e.finishEvent(m, quarantinedOutcome+e.redact(m.routeErr.Error()))
	case m.event != nil:
		e.handleMessageEvent(ctx, key, m)
	case m.runDone != "":
		e.handleMessageRunDone(ctx, key, m)
	case m.poll:
		err := e.safely("poll", func() error { return e.handlePoll(ctx, key) }, "mailbox", key)
		switch {
		case err != nil && ctx.Err() != nil: // closing: the next start polls again
			e.log.Debug("poll stopped by the close", "mailbox", key, "err", err)
		case err != nil:
			e.log.Warn("poll", "mailbox", key, "err", err)
		}
	}
}

// handleMessageEvent handles an event within the event budget, tried again
// on failures outside the forge; one that fails for good is quarantined
// with a sentence a person can act on.
func (e *Engine) handleMessageEvent(ctx context.Context, key string, m message) {
	var outcome string
	ectx, cancel := context.WithTimeout(ctx, e.cfg.EventBudget)
	err := e.retrying(ectx, func() error {
		return e.safely("event", func() (err error) {
			outcome, err = e.handleEvent(ectx, key, m.event)
			return err
		}, "mailbox", key, "delivery", m.event.DeliveryID, "event", m.event.Type)
	})
	overBudget := ectx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil && ctx.Err() != nil {
		// Shutting down: the event stays in the journal and is handled
		// again at the next start.
		return
	}
	if err != nil {
		if overBudget && !forgeFailed(err) {
			err = fmt.Errorf("%w: its handling took longer than %s: %w", forges.ErrUnavailable, e.cfg.EventBudget, err)
		}
		err = e.explain(key, err)
		e.quarantine(ctx, key, m, err)
		outcome = quarantinedOutcome + e.redact(err.Error())
	}
	e.finishEvent(m, outcome)
}

// handleMessageRunDone applies a run's end; while the forge is unavailable
// it is posted again, behind the mailbox's later messages, so the result
// reaches the thread.
func (e *Engine) handleMessageRunDone(ctx context.Context, key string, m message) {
	err := e.retrying(ctx, func() error {
		return e.safely("run end", func() error { return e.handleRunDone(ctx, key, m.runDone) }, "mailbox", key, "run", m.runDone)
	})
	switch {
	case err == nil:
	case ctx.Err() != nil: // the mailbox keeps the run as active: the next start applies it
		e.log.Info("shutting down: the run's end is applied at the next start", "mailbox", key, "run", m.runDone)
	case errors.Is(err, forges.ErrUnavailable):
		e.log.Warn("after run: the forge is unavailable, will try again", "mailbox", key, "run", m.runDone, "in", e.cfg.ForgeCallBudget, "err", err)
		time.AfterFunc(e.cfg.ForgeCallBudget, func() { e.inbox.post(key, m) })
	default:
		e.log.Error("after run, given up until the next start", "mailbox", key, "run", m.runDone, "err", err)
	}
}

// retrying runs f until it succeeds, up to retryTries times, waiting longer
// each time (the state store or git failing for a moment). A forge failure
// ends it at once: the forge client has retried that call already. It waits in
// the mailbox's worker, so the mailbox's later events keep their order while
// other mailboxes go on.
func (e *Engine) retrying(ctx context.Context, f func() error) error {
	delay := e.cfg.RetryDelay
	for try := 1; ; try++ {
		err := f()
		if err == nil || try == retryTries || ctx.Err() != nil || forgeFailed(err) {
			return err // done, out of tries, stopping, or the forge's final word
		}
		e.log.Warn("will try again", "try", try, "in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay = min(2*delay, retryCap*e.cfg.RetryDelay)
	}
}

// Retrying is bounded: with the default first delay of 1 s, doubling up to a
// minute, the tries last about four minutes (cut by EventBudget).
const (
	retryTries = 10
	retryCap   = 60 // the longest wait, in first delays
)

// mailbox reads the mailbox of key; nil when there is none.
func (e *Engine) mailbox(key string) (*state.Mailbox, error) {
	if !isMailboxKey(key) {
		return nil, nil
	}
	k, err := state.ParseMailboxID(key)
	if err != nil {
		return nil, err
	}
	if err := e.known(k.Forge); err != nil {
		return nil, err
	}
	mb, err := e.store.Mailbox(k)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &mb, nil
}

// save writes the mailbox.
func (e *Engine) save(ctx context.Context, mb *state.Mailbox) error {
	if err := e.store.Update(ctx, func(tx *state.Tx) error { return tx.PutMailbox(*mb) }); err != nil {
		return fmt.Errorf("save mailbox %s: %w", mb.ID, err)
	}
	return nil
}

func projectOf(mb *state.Mailbox) forges.Project {
	return forges.Project{Forge: mb.Forge, Owner: mb.Owner, Name: mb.Project}
}

func scopeOf(mb *state.Mailbox) Scope {
	return Scope{Forge: mb.Forge, Owner: mb.Owner, Project: mb.Project}
}

func issueTarget(mb *state.Mailbox) forges.Target {
	kind := forges.TargetIssue
	if mb.Kind == state.KindMR {
		kind = forges.TargetMergeRequest
	}
	return forges.Target{Project: projectOf(mb), Kind: kind, Number: mb.IID}
}

// StoreOverrides reads setting overrides from the state store.
type StoreOverrides struct{ Store *state.Store }

// Override implements Overrides.
func (o StoreOverrides) Override(s Scope, key string) (string, bool) {
	scope := state.ScopeProject
	if s.Project == "" {
		scope = state.ScopeOrganization
	}
	list, _ := o.Store.Settings(scope, s.Forge, s.Owner, s.Project)
	for _, x := range list {
		if x.Key == key {
			return overrideText(x.Value), true
		}
	}
	return "", false
}

// overrideText reads a stored value: settings are stored as JSON strings,
// and a bare JSON value (true, 3) is taken as its text.
func overrideText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
