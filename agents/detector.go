package agents

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// Record is an installation as the detector records it (the wiring keeps
// it as a state.AgentInstallation): a CLI there but failing says why in its
// Reason.
type Record struct {
	AdapterID         string
	Runner            string
	Image             string
	Version           string
	ResumableSessions bool
	Reason            string
	DetectedAt        time.Time
}

// Record is the record of i, detected at at.
func (i Installation) Record(at time.Time) Record {
	reason := i.Reason
	if i.Broken() { // say why on the agents screen, not "not detected"
		reason += ": " + i.Error
	}
	return Record{AdapterID: i.AdapterID, Runner: i.Runner, Image: i.Image, Version: i.Version,
		ResumableSessions: i.ResumableSessions, Reason: reason, DetectedAt: at}
}

// Installation turns r back into what `alfred agents detect` prints, checked
// against verifiedRange.
func (r Record) Installation(verifiedRange string) Installation {
	in := Installation{AdapterID: r.AdapterID, Runner: r.Runner, Image: r.Image, Version: r.Version,
		VerifiedRange: verifiedRange, ResumableSessions: r.ResumableSessions, Reason: r.Reason}
	if msg, ok := strings.CutPrefix(r.Reason, ReasonBroken+": "); ok {
		in.Reason, in.Error = ReasonBroken, msg
	}
	return in
}

// Records is where detections are kept: the state store, which the wiring
// adapts (agents imports no store).
type Records interface {
	// Installations are the records kept; the error tells of records
	// unreadable, beside those returned.
	Installations() ([]Record, error)
	// Put keeps recs in one write, each replacing the record of its CLI,
	// runner and image.
	Put(ctx context.Context, recs []Record) error
}

// RecordFound keeps the CLIs found (installed, or there but failing) in one
// write, each detected at the detection's start at: a record later than a
// request is a detection begun after it.
func RecordFound(ctx context.Context, recs Records, found []Installation, at time.Time) error {
	var keep []Record
	for _, in := range found {
		if in.Installed() || in.Broken() {
			keep = append(keep, in.Record(at))
		}
	}
	if err := recs.Put(ctx, keep); err != nil {
		return fmt.Errorf("record agent installations: %w", err)
	}
	return nil
}

// DetectFunc runs each agent CLI's version command and says what it found.
type DetectFunc func(ctx context.Context) []Installation

// Detector keeps the recorded agent installations true, so that the session
// resolver and the agents screen know which CLI may resume: it detects at
// start (runs wait for that), every interval, and when asked (SIGHUP,
// `alfred agents detect --refresh`, the agents screen's button). Requests
// made while a detection runs are coalesced into one more detection after it.
type Detector struct {
	records  Records
	interval time.Duration                        // 0: only at start and on request
	after    func(time.Duration) <-chan time.Time // time.After; tests drive the schedule
	now      func() time.Time
	requests chan struct{} // at most one request waits
	panicked func()        // told of a panic recovered (a metric); may be nil
	log      *slog.Logger
	stopped  chan struct{} // closed when Run has returned
}

// NewDetector detects into recs every interval (0: only at start and on
// request); panicked, when set, is told of each panic recovered.
func NewDetector(recs Records, interval time.Duration, panicked func(), log *slog.Logger) *Detector {
	return &Detector{records: recs, interval: interval, after: time.After, now: time.Now,
		requests: make(chan struct{}, 1), panicked: panicked, log: log, stopped: make(chan struct{})}
}

// Stopped is closed once Run has returned: no detection runs any more.
func (d *Detector) Stopped() <-chan struct{} { return d.stopped }

// Request asks for a detection once the one running, if any, has ended. It
// never blocks: a request already waiting covers this one.
func (d *Detector) Request() {
	select {
	case d.requests <- struct{}{}:
	default:
	}
}

// Run detects once and closes first (runs wait for it), then detects on the
// schedule and on request until ctx ends.
func (d *Detector) Run(ctx context.Context, detect DetectFunc, first chan<- struct{}) {
	defer close(d.stopped)
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
func (d *Detector) once(ctx context.Context, detect DetectFunc, why string) {
	defer func() {
		if v := recover(); v != nil {
			if d.panicked != nil {
				d.panicked()
			}
			d.log.Error("panic recovered", "in", "detection", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	started := d.now()
	prev, _ := d.records.Installations()
	found := detect(ctx)
	if ctx.Err() != nil {
		d.log.Info("agent detection interrupted", "why", why)
		return
	}
	if err := RecordFound(ctx, d.records, found, started); err != nil {
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
func changed(prev []Record, in Installation) bool {
	want := in.Record(time.Time{})
	for _, p := range prev {
		if p.AdapterID == want.AdapterID && p.Runner == want.Runner && p.Image == want.Image {
			return p.Version != want.Version || p.ResumableSessions != want.ResumableSessions || p.Reason != want.Reason
		}
	}
	return in.Installed() || in.Broken()
}

// NotifyRefresh routes SIGHUP to the channel returned, so that it asks for a
// detection instead of ending the process. serve calls it before it locks
// the state store, since `alfred agents detect --refresh` signals the
// lock's holder.
func NotifyRefresh() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}

// ForwardRefresh turns each signal into a detection request until ctx ends.
// d is nil when the server detects nothing (no forge, so no runs).
func ForwardRefresh(ctx context.Context, sigs <-chan os.Signal, d *Detector, log *slog.Logger) {
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
