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

	st, err := state.Open(ctx, c.StateDir, state.Options{Logger: log})
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
	m := metrics.New(version)
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
	views.Register(r, pages)
	r.Handle("/metrics", m.Handler(c.MetricsToken)).Methods(http.MethodGet)

	var engine *bot.Engine
	if f != nil {
		// Runs wait for the first detection, so that an issue's first run
		// (or one replayed from the journal) already knows if it may resume.
		detected := make(chan struct{})
		e, runner, err := newEngine(ctx, c, st, f, adapters, detected, m, log)
		if err != nil {
			return err
		}
		go func() {
			defer close(detected)
			detectAgents(ctx, c, st, runner, adapters, log)
		}()
		if err := e.Start(ctx); err != nil {
			return err
		}
		engine = e
		r.Handle("/webhooks/"+c.ForgeName, m.Webhooks(c.ForgeName, forges.NewWebhookHandler(c.ForgeName, hooks, c.WebhookSecrets, e.Intake, log))).
			Methods(http.MethodPost)
		m.Gauge("alfred_runs_in_flight", "Runs launched and not ended (queued or running).", func() float64 { return float64(e.RunsInFlight()) })
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
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
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
	if engine != nil {
		engine.Close()
	}
	log.Info("stopped")
	return nil
}
