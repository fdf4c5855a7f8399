package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/views"
)

// serve runs the HTTP server (and, when a forge is configured, the engine)
// until SIGTERM or SIGINT; then requests in flight finish, runs are stopped
// to be resumed at the next start, and the state store is flushed and closed.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	c, err := config.Load("serve", args, os.LookupEnv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP asks for a detection of the agent CLIs: caught before the
	// state store is locked, since its lock tells who to send it to.
	hup, stopHup := notifyRefresh()
	defer stopHup()

	m := metrics.New(version)
	st, err := state.Open(ctx, c.StateDir, state.Options{Logger: log, Observe: m.StateWritten})
	if err != nil {
		return err
	}
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
	var f forges.Forge
	var hooks forges.Hooks
	if c.ForgeKind != "" {
		if f, hooks, err = newForge(c, m); err != nil {
			return err
		}
	}
	r := mux.NewRouter()
	pages, err := pageDeps(c, st, f, adapters, log)
	if err != nil {
		return err
	}
	var det *detector // agents are detected where runs happen: with a forge
	if f != nil {
		det = newDetector(st, c.AgentDetectInterval, m, log)
		pages.Redetect = det.Request
	}
	go forwardRefresh(ctx, hup, det, log)
	follow := followRuns(&pages)
	views.Register(r, pages)
	if c.MetricsListen == "" { // else on a server of its own: serveMetrics
		r.Handle("/metrics", m.Handler(c.MetricsToken)).Methods(http.MethodGet)
	}

	var engine *bot.Engine
	if f != nil {
		// Runs wait for the first detection, so that an issue's first run
		// (or one replayed from the journal) already knows if it may resume.
		detected := make(chan struct{})
		e, runner, err := newEngine(ctx, c, st, f, adapters, detected, m, log)
		if err != nil {
			return err
		}
		go det.run(ctx, detectWith(c, runner, adapters, ranges), detected)
		if err := e.Start(ctx); err != nil {
			return err
		}
		engine = e
		follow.set(e)
		r.Handle("/webhooks/"+c.ForgeName, m.Webhooks(c.ForgeName, forges.NewWebhookHandler(c.ForgeName, hooks, c.WebhookSecrets, e.Intake, log))).
			Methods(http.MethodPost)
		m.Gauge("alfred_runs_in_flight", "Runs launched and not ended (queued or running).", func() float64 { return float64(e.RunsInFlight()) })
		m.EventsWaiting(e.Waiting)
		countSandboxes(m, runner)
	}

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	srv := &http.Server{
		Handler:           views.Recover(log, r),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	follow.stopOn(srv)
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	msrv, err := serveMetrics(c, m, log, served)
	if err != nil {
		srv.Close()
		return err
	}
	log.Info("serving", "addr", ln.Addr().String(), "version", version, "missing", c.Missing())

	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
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
