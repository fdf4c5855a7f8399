// Command alfred is a self-hosted, forge-native bot that works issues with
// coding-agent CLIs in sandboxed containers. This file only wires the
// packages together behind subcommands; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
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

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/views"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `alfred: a forge-native bot that works issues with coding-agent CLIs

Usage:
  alfred serve [flags]          serve webhooks and pages (alfred serve -h lists the flags)
  alfred config reference       print the configuration reference (Markdown)
  alfred version                print the version

Every flag also reads an ALFRED_* variable and the optional -config file.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		err = serve(ctx, rest, stderr)
	case "config":
		if len(rest) != 1 || rest[0] != "reference" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		err = config.Reference(stdout)
	case "version":
		fmt.Fprintln(stdout, version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "alfred: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "alfred %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func newLogger(c *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the HTTP server until SIGTERM or SIGINT, then lets requests in
// flight finish and closes the state store.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	c, err := config.Load("serve", args, os.LookupEnv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	r := mux.NewRouter()
	views.Register(r, views.Deps{Version: version, Config: c, Logger: log})

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	srv := &http.Server{
		Handler:           r,
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
	log.Info("stopped")
	return nil
}
