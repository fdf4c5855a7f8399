package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/alchemic-studio/alfred/agents"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/takeover"
	"github.com/alchemic-studio/alfred/views"
)

// sessionExport is `alfred session export -project [FORGE:]OWNER/NAME
// -issue N [-adapter ID] [-o FILE]`: the archive of the issue's session
// (package takeover), and on standard output the command that resumes it.
func sessionExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var project, adapter, out string
	var issue int64
	c, rest, err := load("session export", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&project, "project", "", "the project, [FORGE:]OWNER/NAME")
		fs.Int64Var(&issue, "issue", 0, "the issue number")
		fs.StringVar(&adapter, "adapter", "", "the agent CLI whose session to export (default: the one of the issue's latest run that kept a session)")
		fs.StringVar(&out, "o", "", "the archive's file (default: its own name, in the current folder)")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 || project == "" || issue <= 0 {
		return errUsage("session export takes -project OWNER/NAME and -issue N, and optionally -adapter ID and -o FILE")
	}
	p, _, err := parseProject(c, project)
	if err != nil {
		return err
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	t, err := newSessionTakeover(c, st)
	if err != nil {
		return err
	}
	mb, err := st.Mailbox(state.MailboxKey{Forge: p.Forge, Owner: p.Owner, Project: p.Name, Kind: state.KindIssue, IID: issue})
	if err != nil {
		return fmt.Errorf("issue %d of %s: %w", issue, p.FullName(), err)
	}
	s, err := t.pick(st, mb, adapter)
	if err != nil {
		return err
	}
	if out == "" {
		out = takeover.FileName(s)
	}
	sum, err := t.writeFile(ctx, out, s)
	if err != nil {
		return err
	}
	cmd, err := takeover.Command(s, filepath.Base(out))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: the %s session %s of %s, %d files, secrets scrubbed\n", out, s.Descriptor.ID, s.NativeID, mb.ID, sum.Files)
	for _, l := range sum.Left {
		fmt.Fprintf(stderr, "left out: %s\n", l)
	}
	if n := s.Descriptor.Takeover.Note; n != "" {
		fmt.Fprintln(stderr, "note: "+n)
	}
	fmt.Fprintln(stdout, cmd)
	return nil
}

// sessionTakeover hands sessions over with the takeover package: the
// local CLIs' descriptors, the state store's session records, the data
// folder's session folders. It is the pages' views.Takeover too.
type sessionTakeover struct {
	exporter    takeover.Exporter
	history     takeover.History
	descriptors map[string]agents.Descriptor
}

func newSessionTakeover(c *config.Config, h takeover.History) (sessionTakeover, error) {
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		return sessionTakeover{}, fmt.Errorf("data folder: %w", err)
	}
	t := sessionTakeover{history: h, descriptors: map[string]agents.Descriptor{},
		exporter: takeover.Exporter{Sessions: botrun.SessionStore{Base: data}, Secrets: func() []string { return takeoverSecrets(c) }}}
	for _, mk := range locals {
		l, err := mk()
		if err != nil {
			return sessionTakeover{}, err
		}
		t.descriptors[l.ID()] = l.Descriptor()
	}
	return t, nil
}

// takeoverSecrets are what no archive holds: every secret the service
// holds (secrets: the sign-in cookies' keys among them), the state
// remote's whole URL, and every
// value of ALFRED_AGENT_ENV, secret-named or not (the gateway's keys among
// them).
func takeoverSecrets(c *config.Config) []string {
	out := append(secrets(c), c.StateRemote)
	for _, k := range c.AgentEnv {
		out = append(out, os.Getenv(k))
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// session is the session of adapterID on mb.
func (t sessionTakeover) session(mb state.Mailbox, adapterID string) (takeover.Session, error) {
	d, ok := t.descriptors[adapterID]
	if !ok {
		return takeover.Session{}, fmt.Errorf("%w: %q is not a local agent CLI", takeover.ErrNoSession, adapterID)
	}
	return takeover.Find(t.history, mb, d)
}

// pick is the session of adapterID on mb or, without one, of the adapter
// of mb's latest run that kept a session.
func (t sessionTakeover) pick(st *state.Store, mb state.Mailbox, adapterID string) (takeover.Session, error) {
	if adapterID != "" {
		return t.session(mb, adapterID)
	}
	runs, err := st.Runs(mb.ID)
	if err != nil && len(runs) == 0 {
		return takeover.Session{}, fmt.Errorf("runs of %s: %w", mb.ID, err)
	}
	for _, r := range slices.Backward(runs) {
		if s, err := t.session(mb, r.AdapterID); err == nil {
			return s, nil
		}
	}
	return takeover.Session{}, fmt.Errorf("%w: no run of %s kept a session of a local agent CLI", takeover.ErrNoSession, mb.ID)
}

// writeFile writes the archive of s to path, whole or not at all (a
// temporary file beside it, renamed at the end), mode 0600.
func (t sessionTakeover) writeFile(ctx context.Context, path string, s takeover.Session) (takeover.Summary, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".alfred-session-*")
	if err != nil {
		return takeover.Summary{}, fmt.Errorf("session export: %w", err)
	}
	defer os.Remove(f.Name()) // gone once renamed
	sum, err := t.exporter.Write(ctx, f, s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sum, fmt.Errorf("session export: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return sum, fmt.Errorf("session export: %w", err)
	}
	return sum, nil
}

// Offer implements views.Takeover.
func (t sessionTakeover) Offer(mb state.Mailbox, adapterID string) (views.TakeoverOffer, bool) {
	s, err := t.session(mb, adapterID)
	if err != nil {
		return views.TakeoverOffer{}, false
	}
	file := takeover.FileName(s)
	cmd, err := takeover.Command(s, file)
	if err != nil {
		return views.TakeoverOffer{}, false
	}
	return views.TakeoverOffer{File: file, Command: cmd, Note: s.Descriptor.Takeover.Note}, true
}

// Write implements views.Takeover.
func (t sessionTakeover) Write(ctx context.Context, w io.Writer, mb state.Mailbox, adapterID string) error {
	s, err := t.session(mb, adapterID)
	if err != nil {
		return err
	}
	_, err = t.exporter.Write(ctx, w, s)
	return err
}
