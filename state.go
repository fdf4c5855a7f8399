package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/state"
)

// The maintainer's `alfred state` subcommands: log, show, verify, export
// and compact.

// openReadOnly opens the state repository for inspection, beside a running server.
func openReadOnly(ctx context.Context, c *config.Config) (*state.Store, error) {
	return state.Open(ctx, c.StateDir, state.Options{ReadOnly: true})
}

// stateLog is `alfred state log [-n N] [MAILBOX]`: the branch's history,
// or the audit history of one mailbox (its id, as on its page), with what
// each commit changed in it.
func stateLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var n int
	c, rest, err := load("state log", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&n, "n", 20, "how many commits, newest first (0: all)")
	})
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return errUsage("state log takes at most one MAILBOX id (forge/owner/project/issue|mr/number)")
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	if len(rest) == 1 {
		return st.MailboxLog(ctx, stdout, rest[0], n)
	}
	return st.Log(ctx, stdout, n)
}

// stateShow is `alfred state show PATH`.
func stateShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, rest, err := load("state show", args, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return errUsage("state show takes one record PATH (see alfred state log)")
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Show(ctx, stdout, rest[0])
}

// stateVerify is `alfred state verify`: git fsck, then every record and
// index entry; it fails when it finds a problem.
func stateVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, rest, err := load("state verify", args, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errUsage("state verify takes no argument")
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.Verify(ctx, stdout)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d problems in the state repository %s", n, c.StateDir)
	}
	return nil
}

// stateExport is `alfred state export [-o FILE]`: every record of the tip
// as JSON lines, to stdout or FILE.
func stateExport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var out string
	c, rest, err := load("state export", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "write to this file instead of the standard output")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errUsage("state export takes no argument but -o FILE")
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	w := stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("state export: %w", err)
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("state export: %w", cerr)
			}
		}()
		w = f
	}
	n, err := st.Export(ctx, w)
	if err != nil {
		return fmt.Errorf("state export: %w", err)
	}
	fmt.Fprintf(stderr, "%d records exported, at commit %s\n", n, st.Tip())
	return nil
}

// stateCompact is `alfred state compact [-keep N] [-archive]`, with the
// server stopped.
func stateCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var opts state.CompactOptions
	c, rest, err := load("state compact", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&opts.Keep, "keep", 1000, "how many of the newest commits keep their own history; older ones are squashed into one")
		fs.BoolVar(&opts.Archive, "archive", false, "keep the whole history before the compaction in branch alfred/archive/{time}")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errUsage("state compact takes no argument but -keep N and -archive")
	}
	t0 := time.Now()
	res, err := state.Compact(ctx, c.StateDir, opts)
	if errors.Is(err, state.ErrCompactRunning) {
		return fmt.Errorf("%w (alfred serve holds %s)", err, c.StateDir)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d commits -> %d (tip %s -> %s); %d packs and %d loose objects -> 1 pack of %d objects, in %s\n",
		c.StateDir, res.Before, res.After, res.OldTip, res.NewTip, res.PacksBefore, res.LooseBefore, res.Objects, time.Since(t0).Round(time.Millisecond))
	if res.Archive != "" {
		fmt.Fprintf(stdout, "the history before is kept in %s\n", res.Archive)
	}
	if c.StateRemote != "" && res.OldTip != res.NewTip {
		fmt.Fprintln(stdout, "the state mirror replaces the remote branch with this history at its next push")
	}
	return nil
}
