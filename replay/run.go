package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// Records is what a replay reads of the engine's state store.
type Records interface {
	Mailbox(k state.MailboxKey) (state.Mailbox, error)
	Runs(mailboxID string) ([]state.Run, error)
	RunWithSessions(runID string) (state.Run, []state.LLMSession, error)
}

// Git is the bot's git access to a project: the check clones the pull
// request's branch with it.
type Git interface {
	CloneURL(ctx context.Context, p forges.Project) (string, error)
	GitCredentials(ctx context.Context, p forges.Project) (username, password string, err error)
}

// Config is what a replay needs; the root wiring fills it.
type Config struct {
	Site *Site
	// Forge is the name the engine knows the forge by (the mailboxes'
	// Forge); Bot the bot's login there; Hook where the forge sends the
	// repositories' events (the engine's webhook route).
	Forge string
	Bot   string
	Hook  Hook
	// Prepare readies a new repository for the engine before its issue is
	// opened: the bot's labels, and the project's settings (its adapter and
	// model, and no plan validation, so that the issue goes to a pull
	// request without a person).
	Prepare func(ctx context.Context, p forges.Project, adapter string) error
	Records Records
	Git     Git
	// Runner runs the checks, in containers (never the host runner), from
	// CheckSpec (the image, its user, a bare environment).
	Runner    sandbox.Runner
	CheckSpec sandbox.Spec
	// Stops are the statuses at which a mailbox with no run going waits for
	// a person or for nobody: the end of a case that opened no pull request.
	Stops []string
	// Adapters are replayed in turn on every case; Model is the model each
	// is asked for ("" is the CLI's default).
	Adapters []string
	Model    string
	// Parallel bounds the cases worked at once (default 2); Poll is how often
	// the mailbox is read (default 1s).
	Parallel int
	Poll     time.Duration
	// WorkDir holds the checks' clones.
	WorkDir string
	Log     *slog.Logger
}

// Run replays every case with every adapter and reports what came of it. A
// case that could not be set up or checked is reported with its error,
// unsolved; Run fails only when nothing could be replayed.
func Run(ctx context.Context, cfg Config, cases []Case) (Report, error) {
	if len(cfg.Adapters) == 0 {
		return Report{}, errors.New("replay: no adapter")
	}
	if cfg.Runner == nil || !sandbox.InContainer(cfg.Runner.Name()) {
		return Report{}, errors.New("replay: the checks run the agent's code: they need the image or kubernetes runner, never the host")
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 2
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	started := time.Now()
	results := make([]Result, len(cases)*len(cfg.Adapters))
	slots := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for i, c := range cases {
		for j, a := range cfg.Adapters {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				slots <- struct{}{}
				defer func() { <-slots }()
				results[k] = replayOne(ctx, cfg, c, a)
			}(i*len(cfg.Adapters) + j)
		}
	}
	wg.Wait()
	rep := Build(results, cfg.Model, time.Since(started))
	if slices.IndexFunc(results, func(r Result) bool { return r.Error == "" }) < 0 {
		return rep, errors.New("replay: no case could be replayed (each result says why)")
	}
	return rep, nil
}

// replayOne replays case c with adapter: a fresh repository, the issue
// assigned, the wait for a pull request or an end, the check.
func replayOne(ctx context.Context, cfg Config, c Case, adapter string) (res Result) {
	res = Result{Case: c.Name, Adapter: adapter, Model: cfg.Model}
	started := time.Now()
	defer func() { res.Wall = time.Since(started) }()
	log := cfg.Log.With("case", c.Name, "adapter", adapter)
	fail := func(err error) Result {
		log.Warn("replay case failed", "err", err)
		res.Error = err.Error()
		return res
	}
	suffix, err := randomHex(3)
	if err != nil {
		return fail(err)
	}
	p, err := cfg.Site.Repository(ctx, c, repoName(c.Name, adapter, suffix), cfg.Bot, cfg.Hook, func(ctx context.Context, p forges.Project) error {
		p.Forge = cfg.Forge
		return cfg.Prepare(ctx, p, adapter)
	})
	if p.Name != "" {
		res.Repository = p.FullName()
	}
	if err != nil {
		return fail(err)
	}
	p.Forge = cfg.Forge
	opened, err := cfg.Site.Issue(ctx, c, p, cfg.Bot)
	if err != nil {
		return fail(err)
	}
	res.Issue, res.IssueURL = opened.Issue, opened.URL
	log.Info("replay case opened", "issue", opened.URL)
	mb, err := wait(ctx, cfg, state.MailboxKey{Forge: p.Forge, Owner: p.Owner, Project: p.Name, Kind: state.KindIssue, IID: opened.Issue}, time.Duration(c.TimeLimit))
	res.Status, res.PullRequest, res.Branch = mb.Status, mb.MergeRequestIID, mb.BranchName
	if err != nil {
		res.Error = err.Error()
	}
	if mb.MergeRequestIID != 0 && mb.BranchName != "" && ctx.Err() == nil {
		chk, err := check(ctx, cfg, c, p, mb.BranchName)
		res.Check = &chk
		if err != nil {
			return fail(err)
		}
		res.Solved = chk.Passed()
	}
	o, err := outcomeOf(cfg.Records, mb, time.Now())
	if err != nil {
		return fail(err)
	}
	res.Outcome = settle(o, res, time.Now())
	log.Info("replay case ended", "status", res.Status, "pull_request", res.PullRequest, "solved", res.Solved)
	return res
}

// repoName is the repository of one case replayed with one adapter.
func repoName(name, adapter, suffix string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(adapter))
	return "replay-" + name + "-" + clean + "-" + suffix
}

// errTimeLimit is a case whose mailbox reached neither a pull request nor
// an end within its time limit.
var errTimeLimit = errors.New("the time limit passed before a pull request or an end")

// wait reads the mailbox until it has a pull request, or stands at a stop,
// with no run going; the last mailbox read comes back with errTimeLimit
// when limit passed first.
func wait(ctx context.Context, cfg Config, key state.MailboxKey, limit time.Duration) (state.Mailbox, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	var last state.Mailbox
	for {
		if m, err := cfg.Records.Mailbox(key); err == nil {
			last = m
			if m.ActiveRunID == "" && (m.MergeRequestIID != 0 || slices.Contains(cfg.Stops, m.Status)) {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			switch {
			case !errors.Is(ctx.Err(), context.DeadlineExceeded):
			case last.ID == "":
				return last, fmt.Errorf("%w (%s): the bot never took the issue; does the forge reach the webhook at %s?", errTimeLimit, limit, cfg.Hook.URL)
			default:
				return last, fmt.Errorf("%w (%s; the mailbox is %q)", errTimeLimit, limit, last.Status)
			}
			return last, fmt.Errorf("replay stopped: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// outcomeOf derives the mailbox's outcome from its records (none when the
// bot never made the mailbox).
func outcomeOf(rec Records, mb state.Mailbox, now time.Time) (outcomes.Outcome, error) {
	if mb.ID == "" {
		return outcomes.Outcome{End: outcomes.EndOpen}, nil
	}
	runs, err := rec.Runs(mb.ID)
	if err != nil {
		return outcomes.Outcome{}, fmt.Errorf("the runs of %s: %w", mb.ID, err)
	}
	var sessions []state.LLMSession
	for _, r := range runs {
		_, ls, err := rec.RunWithSessions(r.ID)
		if err != nil {
			return outcomes.Outcome{}, fmt.Errorf("the sessions of run %s: %w", r.ID, err)
		}
		sessions = append(sessions, ls...)
	}
	return outcomes.Derive(mb, runs, sessions, now, 0), nil
}

// settle ends an outcome as a replay does: a pull request whose check
// passed counts as merged, one whose check failed as closed unmerged,
// both at now; a case without a pull request keeps the end its records
// give (blocked, paused, still open at the time limit).
func settle(o outcomes.Outcome, res Result, now time.Time) outcomes.Outcome {
	if res.Check == nil {
		return o
	}
	o.End, o.By = outcomes.EndClosed, ""
	if res.Solved {
		o.End = outcomes.EndMerged
	}
	o.Finished = outcomes.Milestone{At: now}
	if !o.AssignedAt.IsZero() && !now.Before(o.AssignedAt) {
		after := now.Sub(o.AssignedAt)
		o.Finished.After = &after
	}
	o.Idle = nil
	return o
}
