package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// detectFunc runs each agent CLI's version command and says what it found.
type detectFunc func(ctx context.Context) []agents.Installation

// detectWith detects the CLIs of the local adapters on runner, with the
// verified ranges of ALFRED_AGENT_VERIFIED_RANGES.
func detectWith(c *config.Config, runner sandbox.Runner, adapters map[string]agents.Adapter, ranges map[string]string) detectFunc {
	return func(ctx context.Context) []agents.Installation {
		return agents.Detect(ctx, runner, baseSpec(c), localCLIs(adapters), ranges)
	}
}

// verifiedRanges is ALFRED_AGENT_VERIFIED_RANGES, once each adapter it names
// is known to be an agent CLI Alfred drives.
func verifiedRanges(c *config.Config, adapters map[string]agents.Adapter) (map[string]string, error) {
	var ids []string
	for _, cli := range localCLIs(adapters) {
		ids = append(ids, cli.Descriptor().ID)
	}
	if err := c.CheckVerifiedRanges(ids); err != nil {
		return nil, err
	}
	return c.AgentVerifiedRanges, nil
}

// detector keeps the recorded agent installations true, so that the session
// resolver and the agents screen know which CLI may resume: it detects at
// start (runs wait for that), every interval, and when asked (SIGHUP,
// `alfred agents detect --refresh`, the agents screen's button). Requests
// made while a detection runs are coalesced into one more detection after it.
type detector struct {
	store    *state.Store
	interval time.Duration                        // 0: only at start and on request
	after    func(time.Duration) <-chan time.Time // time.After; tests drive the schedule
	now      func() time.Time
	requests chan struct{} // at most one request waits
	metrics  *metrics.Metrics
	log      *slog.Logger
}

func newDetector(st *state.Store, interval time.Duration, m *metrics.Metrics, log *slog.Logger) *detector {
	return &detector{store: st, interval: interval, after: time.After, now: time.Now,
		requests: make(chan struct{}, 1), metrics: m, log: log}
}

// Request asks for a detection once the one running, if any, has ended. It
// never blocks: a request already waiting covers this one.
func (d *detector) Request() {
	select {
	case d.requests <- struct{}{}:
	default:
	}
}

// run detects once and closes first (runs wait for it), then detects on the
// schedule and on request until ctx ends.
func (d *detector) run(ctx context.Context, detect detectFunc, first chan<- struct{}) {
	d.once(ctx, detect, "start")
	if first != nil {
		close(first)
	}
	for {
		var tick <-chan time.Time
		if d.interval > 0 {
			tick = d.after(d.interval)
		}
		why := "schedule"
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-d.requests:
			why = "request"
		}
		d.once(ctx, detect, why)
	}
}

// once runs one detection and records it. A panic is logged and counted, and
// the loop goes on with the next detection.
func (d *detector) once(ctx context.Context, detect detectFunc, why string) {
	defer func() {
		if v := recover(); v != nil {
			d.metrics.PanicRecovered("detection")
			d.log.Error("panic recovered", "in", "detection", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	started := d.now()
	prev, _ := d.store.Installations()
	found := detect(ctx)
	if ctx.Err() != nil {
		d.log.Info("agent detection interrupted", "why", why)
		return
	}
	if err := recordInstallations(ctx, d.store, found, started); err != nil {
		d.log.Error("agent detection not recorded", "why", why, "err", err)
		return
	}
	d.log.Info("agents detected", "why", why, "took", d.now().Sub(started).Round(time.Millisecond))
	for _, in := range found {
		level := slog.LevelInfo
		if why == "schedule" && !changed(prev, in) {
			level = slog.LevelDebug // every hour, only news
		}
		d.log.Log(ctx, level, "agent detected", "adapter", in.AdapterID, "runner", in.Runner, "version", in.Version,
			"resumable", in.ResumableSessions, "verified_range", in.VerifiedRange, "reason", in.Reason, "error", in.Error)
	}
}

// changed tells whether in differs from what was recorded for its CLI.
func changed(prev []state.AgentInstallation, in agents.Installation) bool {
	want := record(in, time.Time{})
	for _, p := range prev {
		if p.AdapterID == want.AdapterID && p.Runner == want.Runner && p.Image == want.Image {
			return p.Version != want.Version || p.ResumableSessions != want.ResumableSessions || p.Reason != want.Reason
		}
	}
	return in.Installed() || in.Broken()
}

// record is the state record of an installation detected at at.
func record(in agents.Installation, at time.Time) state.AgentInstallation {
	reason := in.Reason
	if in.Broken() { // say why on the agents screen, not "not detected"
		reason += ": " + in.Error
	}
	return state.AgentInstallation{AdapterID: in.AdapterID, Runner: in.Runner, Image: in.Image, Version: in.Version,
		ResumableSessions: in.ResumableSessions, Reason: reason, DetectedAt: at}
}

// recordInstallations stores the CLIs found (installed, or there but
// failing) in one commit, each detected at the detection's start: a record
// later than a request is a detection begun after it.
func recordInstallations(ctx context.Context, st *state.Store, found []agents.Installation, at time.Time) error {
	err := st.Update(ctx, func(tx *state.Tx) error {
		for _, in := range found {
			if !in.Installed() && !in.Broken() {
				continue
			}
			if err := tx.PutInstallation(record(in, at)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record agent installations: %w", err)
	}
	return nil
}

// notifyRefresh routes SIGHUP to the channel returned, so that it asks for a
// detection instead of ending the process. serve calls it before it locks
// the state store, since `alfred agents detect --refresh` signals the
// lock's holder.
func notifyRefresh() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}

// forwardRefresh turns each signal into a detection request until ctx ends.
// d is nil when the server detects nothing (no forge, so no runs).
func forwardRefresh(ctx context.Context, sigs <-chan os.Signal, d *detector, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-sigs:
			if d == nil {
				log.Info("agent detection not requested: agents are detected only with a forge configured", "signal", s.String())
				continue
			}
			log.Info("agent detection requested", "by", s.String())
			d.Request()
		}
	}
}

// refresher is `alfred agents detect --refresh`: the server holding the state
// store detects again (asked by SIGHUP), or, when none does, the command
// detects and records itself.
type refresher struct {
	stateDir string
	// runner and image say which records the server's detection writes.
	runner, image string
	// ranges are the verified ranges by adapter id, for the table.
	ranges map[string]string
	detect detectFunc
	signal func(pid int) error
	wait   time.Duration // how long the server may take
	poll   time.Duration
	now    func() time.Time
	log    *slog.Logger
}

// refreshWait bounds the wait for the server's detection.
const refreshWait = 2 * time.Minute

func newRefresher(c *config.Config, runner sandbox.Runner, adapters map[string]agents.Adapter, ranges map[string]string, log *slog.Logger) refresher {
	r := refresher{stateDir: c.StateDir, runner: runner.Name(), detect: detectWith(c, runner, adapters, ranges),
		ranges: map[string]string{}, signal: hangUp, wait: refreshWait, poll: time.Second, now: time.Now, log: log}
	if sandbox.InContainer(r.runner) {
		r.image = c.AgentImage
	}
	for _, cli := range localCLIs(adapters) {
		d := cli.Descriptor()
		r.ranges[d.ID] = cmp.Or(ranges[d.ID], d.VerifiedRange)
	}
	return r
}

func (r refresher) run(ctx context.Context, w io.Writer) error {
	st, err := state.Open(ctx, r.stateDir, state.Options{Logger: r.log})
	switch {
	case errors.Is(err, state.ErrLocked):
		return r.viaServer(ctx, w)
	case err != nil:
		return fmt.Errorf("open the state store to record the detection: %w", err)
	}
	started := r.now()
	found := r.detect(ctx)
	err = recordInstallations(ctx, st, found, started)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close the state store: %w", cerr)
	}
	if err != nil {
		return err
	}
	r.log.Info("no server holds the state store: detected and recorded here", "state", r.stateDir)
	return agents.PrintInstallations(w, found)
}

// viaServer asks the store's holder to detect and prints what it records.
func (r refresher) viaServer(ctx context.Context, w io.Writer) error {
	pid, err := state.LockHolder(r.stateDir)
	if err != nil {
		return err
	}
	requested := r.now()
	if err := r.signal(pid); err != nil {
		return fmt.Errorf("ask the server holding the state store (pid %d) to detect again: %w", pid, err)
	}
	r.log.Info("asked the server to detect the agents again", "pid", pid)
	recs, err := r.await(ctx, pid, requested)
	if err != nil {
		return err
	}
	insts := make([]agents.Installation, 0, len(recs))
	for _, rec := range recs {
		insts = append(insts, r.installation(rec))
	}
	return agents.PrintInstallations(w, insts)
}

// await polls the store, read-only, until it holds installations of this
// runner and image detected after requested.
func (r refresher) await(ctx context.Context, pid int, requested time.Time) ([]state.AgentInstallation, error) {
	ctx, cancel := context.WithTimeout(ctx, r.wait)
	defer cancel()
	for {
		recs, err := r.detectedSince(ctx, requested)
		if err != nil || len(recs) > 0 {
			return recs, err
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded {
				return nil, fmt.Errorf("the server (pid %d) recorded no detection within %s: it detects the agents only when it serves with a forge (ALFRED_FORGE), and records only the CLIs it finds; see its log", pid, r.wait)
			}
			return nil, ctx.Err()
		case <-time.After(r.poll):
		}
	}
}

func (r refresher) detectedSince(ctx context.Context, since time.Time) ([]state.AgentInstallation, error) {
	st, err := state.Open(ctx, r.stateDir, state.Options{ReadOnly: true, Logger: r.log})
	if err != nil {
		return nil, fmt.Errorf("read the state store: %w", err)
	}
	defer st.Close()
	all, err := st.Installations()
	var out []state.AgentInstallation
	for _, a := range all {
		if a.Runner == r.runner && a.Image == r.image && a.DetectedAt.After(since) {
			out = append(out, a)
		}
	}
	if len(out) == 0 && err != nil {
		return nil, fmt.Errorf("read the agent installations: %w", err)
	}
	return out, nil
}

// installation turns a record back into what `alfred agents detect` prints.
func (r refresher) installation(a state.AgentInstallation) agents.Installation {
	in := agents.Installation{AdapterID: a.AdapterID, Runner: a.Runner, Image: a.Image, Version: a.Version,
		VerifiedRange: r.ranges[a.AdapterID], ResumableSessions: a.ResumableSessions, Reason: a.Reason}
	if msg, ok := strings.CutPrefix(a.Reason, agents.ReasonBroken+": "); ok {
		in.Reason, in.Error = agents.ReasonBroken, msg
	}
	return in
}

// hangUp sends SIGHUP to pid, once it looks like `alfred serve`: another
// subcommand holding the store for a moment (settings set) has no handler
// for SIGHUP and would end.
func hangUp(pid int) error {
	if args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
		!slices.Contains(strings.Split(string(args), "\x00"), "serve") {
		return fmt.Errorf("pid %d is not `alfred serve` (%s): try again once it has ended", pid, strings.ReplaceAll(strings.TrimRight(string(args), "\x00"), "\x00", " "))
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("send SIGHUP: %w", err)
	}
	return nil
}
