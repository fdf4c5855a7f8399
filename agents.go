package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// `alfred agents detect [--refresh]`, and the wiring of the detection of
// the agent CLIs: serve's Detector and the Refresher record into the state
// store through the adapters below (agents imports no store).

// agentsDetect is `alfred agents detect [--refresh]`: it prints what it
// finds and records nothing (the server records at its start). With
// --refresh the installations are recorded again: by the server holding the
// state store, asked with SIGHUP, or by this command when none does.
func agentsDetect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var refresh bool
	c, rest, err := load("agents detect", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&refresh, "refresh", false, "record the detection: ask the server holding the state store (SIGHUP), or record it here when none does")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errUsage("agents detect takes no argument but --refresh")
	}
	log := newLogger(c, stderr)
	runner, err := newRunner(ctx, c, log)
	if err != nil {
		return err
	}
	adapters, err := newAdapters(c)
	if err != nil {
		return err
	}
	ranges, err := verifiedRanges(c, adapters)
	if err != nil {
		return err
	}
	if refresh {
		return newRefresher(c, runner, adapters, ranges, log).Run(ctx, stdout)
	}
	return agents.DetectCommand(ctx, stdout, runner, baseSpec(c), localCLIs(adapters), ranges)
}

// newRefresher is `alfred agents detect --refresh` on the state store of
// ALFRED_STATE_DIR.
func newRefresher(c *config.Config, runner sandbox.Runner, adapters map[string]agents.Adapter, ranges map[string]string, log *slog.Logger) agents.Refresher {
	r := agents.Refresher{Store: sharedInstallations{dir: c.StateDir, log: log}, Where: c.StateDir,
		Runner: runner.Name(), Detect: detectWith(c, runner, adapters, ranges), Ranges: map[string]string{}, Log: log}
	if sandbox.InContainer(r.Runner) {
		r.Image = c.AgentImage
	}
	for _, cli := range localCLIs(adapters) {
		d := cli.Descriptor()
		r.Ranges[d.ID] = cmp.Or(ranges[d.ID], d.VerifiedRange)
	}
	return r
}

// detectWith detects the CLIs of the local adapters on runner, with the
// verified ranges of ALFRED_AGENT_VERIFIED_RANGES.
func detectWith(c *config.Config, runner sandbox.Runner, adapters map[string]agents.Adapter, ranges map[string]string) agents.DetectFunc {
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

// installations are the agent installations of the state store, as the
// detector records them (agents.Records).
type installations struct{ store *state.Store }

func (i installations) Installations() ([]agents.Record, error) {
	all, err := i.store.Installations()
	out := make([]agents.Record, 0, len(all))
	for _, a := range all {
		out = append(out, agents.Record{AdapterID: a.AdapterID, Runner: a.Runner, Image: a.Image, Version: a.Version,
			ResumableSessions: a.ResumableSessions, Reason: a.Reason, DetectedAt: a.DetectedAt})
	}
	return out, err
}

// Put records recs in one commit.
func (i installations) Put(ctx context.Context, recs []agents.Record) error {
	return i.store.Update(ctx, func(tx *state.Tx) error {
		for _, r := range recs {
			err := tx.PutInstallation(state.AgentInstallation{AdapterID: r.AdapterID, Runner: r.Runner, Image: r.Image,
				Version: r.Version, ResumableSessions: r.ResumableSessions, Reason: r.Reason, DetectedAt: r.DetectedAt})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// sharedInstallations are the agent installations of the state store in
// dir, beside the server that may hold it (agents.SharedRecords).
type sharedInstallations struct {
	dir string
	log *slog.Logger
}

func (s sharedInstallations) Open(ctx context.Context) (agents.Records, func() error, bool, error) {
	st, err := state.Open(ctx, s.dir, state.Options{Logger: s.log})
	switch {
	case errors.Is(err, state.ErrLocked):
		return nil, nil, true, nil
	case err != nil:
		return nil, nil, false, err
	}
	return installations{st}, st.Close, false, nil
}

func (s sharedInstallations) Holder() (int, error) { return state.LockHolder(s.dir) }

func (s sharedInstallations) Read(ctx context.Context) ([]agents.Record, error) {
	st, err := state.Open(ctx, s.dir, state.Options{ReadOnly: true, Logger: s.log})
	if err != nil {
		return nil, fmt.Errorf("read the state store: %w", err)
	}
	defer st.Close()
	recs, err := installations{st}.Installations()
	if err != nil {
		return recs, fmt.Errorf("read the agent installations: %w", err)
	}
	return recs, nil
}
