package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/setup"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/views"
)

// serve runs the HTTP server (and, when a forge is configured, the engine)
// until SIGTERM or SIGINT; then requests in flight finish, runs are stopped
// to be resumed at the next start, and the state store is flushed and closed.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	c, err := config.Load("serve", args, os.LookupEnv, stderr, setup.ConfigKinds())
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP asks for a detection of the agent CLIs: caught before the
	// state store is locked, since its lock tells who to send it to.
	hup, stopHup := agents.NotifyRefresh()
	defer stopHup()

	// A first start makes its folders, private to the bot.
	for _, dir := range []string{c.DataDir, c.StateDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create the folder %s: %w", dir, err)
		}
	}
	m := metrics.New(version)
	st, keeper, err := openState(ctx, c, m, log) // wiring.go: restore, mirror, write health
	if err != nil {
		return err
	}
	defer keeper.close() // after the store's Close: one last push
	// wiring.go: a project is named only when public
	m.Outcomes(outcomesTTL, outcomeFigures(ctx, c, st, log))
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("close state store", "err", err)
		}
	}()

	adapters, err := newAdapters(c)
	if err != nil {
		return err
	}
	ranges, err := verifiedRanges(c, adapters)
	if err != nil {
		return err
	}
	fs, err := connectForges(c, m)
	if err != nil {
		return err
	}
	hooks := &webhookRoutes{}
	r, det, follow, err := routes(ctx, c, st, keeper, fs, adapters, hup, hooks, m, log)
	if err != nil {
		return err
	}

	var engine *bot.Engine
	if len(fs) > 0 {
		if engine, err = startEngine(ctx, c, st, fs, adapters, ranges, det, follow, hooks, r, m, log); err != nil {
			return err
		}
	}

	srv, msrv, served, err := listen(c, r, follow, m, log)
	if err != nil {
		return err
	}
	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	return shutdown(c, srv, msrv, engine, log)
}

// startEngine builds and starts the engine, its first detection of the
// agent CLIs (runs wait for it, so that an issue's first run, or one replayed
// from the journal, already knows if it may resume), the webhook route and
// the engine's gauges.
func startEngine(ctx context.Context, c *config.Config, st *state.Store, fs []connected, adapters map[string]agents.Adapter,
	ranges map[string]string, det *agents.Detector, follow *liveRuns, hooks *webhookRoutes, r *mux.Router, m *metrics.Metrics, log *slog.Logger) (*bot.Engine, error) {
	detected := make(chan struct{})
	e, runner, err := newEngine(ctx, c, st, fs, adapters, detected, m, log)
	if err != nil {
		return nil, err
	}
	go det.Run(ctx, detectWith(c, runner, adapters, ranges), detected)
	if err := e.Start(ctx); err != nil {
		return nil, err
	}
	follow.set(e)
	for _, f := range fs { // each forge its own route, parser and secrets
		name := f.cfg.Name
		h := forges.NewWebhookHandler(name, f.hooks, f.cfg.WebhookSecrets, e.Intake, log)
		hooks.add(name, h)
		r.Handle("/webhooks/"+name, m.Webhooks(name, h)).Methods(http.MethodPost)
	}
	m.ForgeReach(func() []metrics.Reach {
		var out []metrics.Reach
		for _, r := range e.Reach() {
			out = append(out, metrics.Reach{Forge: r.Name, Up: r.Reachable(), DownSince: r.Since})
		}
		return out
	})
	m.Gauge("alfred_runs_in_flight", "Runs launched and not ended (queued or running).", func() float64 { return float64(e.RunsInFlight()) })
	m.EventsWaiting(e.Waiting)
	countSandboxes(m, runner)
	return e, nil
}

// webhookRoutes are the webhook endpoints, by forge, once the engine runs.
type webhookRoutes struct {
	mu sync.Mutex
	hs map[string]*forges.WebhookHandler
}

func (w *webhookRoutes) add(forge string, h *forges.WebhookHandler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hs == nil {
		w.hs = map[string]*forges.WebhookHandler{}
	}
	w.hs[forge] = h
}

// notes say, per forge, the deliveries refused for their signature since
// the start: its webhook's secret is not one of ALFRED_WEBHOOK_SECRETS.
func (w *webhookRoutes) notes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(w.hs)) {
		if r := w.hs[name].Refused(); r.Count > 0 {
			out = append(out, fmt.Sprintf("forge %s: %d webhook deliveries refused since %s, the last at %s (%s): the webhook's secret on the forge must be one of its ALFRED_WEBHOOK_SECRETS",
				name, r.Count, r.First.UTC().Format(time.RFC3339), r.Last.UTC().Format(time.RFC3339), r.Reason))
		}
	}
	return out
}

// healthNotes is what /readyz and the home page add to the readiness: the
// state mirror's state, each forge the engine does not reach yet, and the
// webhook deliveries refused for their signature.
func healthNotes(keeper *stateKeeper, follow *liveRuns, hooks *webhookRoutes) func() []string {
	return func() []string {
		notes := append(keeper.notes(), hooks.notes()...)
		if e := follow.engine.Load(); e != nil {
			for _, r := range e.Reach() {
				if n := r.Note(); n != "" {
					notes = append(notes, n)
				}
			}
		}
		return notes
	}
}

// listen serves r on ALFRED_LISTEN (and /metrics on ALFRED_METRICS_LISTEN
// when set); served receives the error of a server that stops on its own.
func listen(c *config.Config, r *mux.Router, follow *liveRuns, m *metrics.Metrics, log *slog.Logger) (srv, msrv *http.Server, served chan error, err error) {
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	srv = &http.Server{
		Handler:           views.Recover(log, r),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	follow.stopOn(srv)
	served = make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	if msrv, err = serveMetrics(c, m, log, served); err != nil {
		srv.Close()
		return nil, nil, nil, err
	}
	log.Info("serving", "addr", ln.Addr().String(), "version", version, "missing", c.Missing())
	return srv, msrv, served, nil
}

// shutdown lets requests in flight finish, then stops the engine (its runs
// are resumed at the next start).
func shutdown(c *config.Config, srv, msrv *http.Server, engine *bot.Engine, log *slog.Logger) error {
	log.Info("shutting down", "timeout", c.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	if err := shutdownMetrics(sctx, msrv); err != nil {
		return err
	}
	if engine != nil {
		engine.Close()
	}
	log.Info("stopped")
	return nil
}

// routes registers the pages and /metrics (unless it has an address of its
// own) on a new router, with the detector of the agent CLIs behind the
// agents screen's button and SIGHUP (none without a forge: no runs) and the
// follower of live runs, which the engine joins once started.
func routes(ctx context.Context, c *config.Config, st *state.Store, keeper *stateKeeper, fs []connected, adapters map[string]agents.Adapter,
	hup <-chan os.Signal, hooks *webhookRoutes, m *metrics.Metrics, log *slog.Logger) (*mux.Router, *agents.Detector, *liveRuns, error) {
	r := mux.NewRouter()
	pages, err := pageDeps(c, st, fs, adapters, log)
	if err != nil {
		return nil, nil, nil, err
	}
	follow := followRuns(&pages)
	pages.Ready, pages.Notes = keeper.ready(pages.Ready), healthNotes(keeper, follow, hooks)
	var det *agents.Detector
	if len(fs) > 0 {
		det = agents.NewDetector(installations{st}, c.AgentDetectInterval, func() { m.PanicRecovered("detection") }, log)
		pages.Redetect = det.Request
	}
	go agents.ForwardRefresh(ctx, hup, det, log)
	views.Register(r, pages)
	if c.MetricsListen == "" { // else on a server of its own: serveMetrics
		r.Handle("/metrics", m.Handler(c.MetricsToken)).Methods(http.MethodGet)
	}
	return r, det, follow, nil
}

// liveRuns lets the run pages follow the output of the engine's runs. The
// engine is made after the pages are registered: until it is set (and
// without a forge, for good) no run is followed, and the pages of runs in
// progress refresh themselves as they do without a live source.
type liveRuns struct {
	engine   atomic.Pointer[bot.Engine]
	stopping chan struct{}
}

// followRuns makes the pages follow the runs of the engine given later to set.
func followRuns(pages *views.Deps) *liveRuns {
	l := &liveRuns{stopping: make(chan struct{})}
	pages.Live, pages.Stopping = l, l.stopping
	return l
}

// Follow implements views.LiveRuns.
func (l *liveRuns) Follow(runID string) (*live.Output, bool) {
	if e := l.engine.Load(); e != nil {
		return e.Follow(runID)
	}
	return nil, false
}

// set is the engine whose runs are followed.
func (l *liveRuns) set(e *bot.Engine) { l.engine.Store(e) }

// stopOn ends the live streams when srv shuts down: Shutdown waits for the
// requests in flight, and a stream lasts as long as its run.
func (l *liveRuns) stopOn(srv *http.Server) {
	srv.RegisterOnShutdown(func() { close(l.stopping) })
}

// serveMetrics serves /metrics alone, with the same token check, on
// ALFRED_METRICS_LISTEN when it is set (nil, nil when not: the pages' server
// has /metrics). The server's end is sent on served.
func serveMetrics(c *config.Config, m *metrics.Metrics, log *slog.Logger, served chan<- error) (*http.Server, error) {
	if c.MetricsListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", c.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for /metrics: %w", c.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler(c.MetricsToken))
	srv := &http.Server{
		Handler:           views.Recover(log, mux),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { served <- fmt.Errorf("metrics: %w", srv.Serve(ln)) }()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return srv, nil
}

// shutdownMetrics stops the server of serveMetrics, if there is one.
func shutdownMetrics(ctx context.Context, srv *http.Server) error {
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down metrics server: %w", err)
	}
	return nil
}

// countSandboxes reports the runner's sandboxes (containers or processes)
// started and not yet torn down.
func countSandboxes(m *metrics.Metrics, r sandbox.Runner) {
	if c, ok := r.(interface{ Running() int }); ok {
		m.ContainersRunning(r.Name(), c.Running)
	}
}
