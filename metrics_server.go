package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/views"
)

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
