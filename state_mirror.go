package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges/setup"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/state/mirror"
)

// stateKeeper watches the state store for serve: whether its writes succeed
// and whether the disks of the store and of the event journal take writes
// (for /readyz, the home page and alfred_state_writable), and the mirror of
// the branch to ALFRED_STATE_REMOTE.
type stateKeeper struct {
	health *state.Health  // the store's commits and the disks of the store and the data folder
	mirror *mirror.Mirror // nil without ALFRED_STATE_REMOTE
	m      *metrics.Metrics
	log    *slog.Logger
}

// prepareFor bounds what the start asks of the state remote.
const prepareFor = 2 * time.Minute

// openState opens the state store for serve. With ALFRED_STATE_REMOTE set,
// an empty state folder is first restored from the remote, a remote holding
// commits the local branch lacks stops the start (the error says how to
// resolve it), and the mirror pushes the branch after every commit batch.
func openState(ctx context.Context, c *config.Config, m *metrics.Metrics, log *slog.Logger) (*state.Store, *stateKeeper, error) {
	k := &stateKeeper{health: state.NewHealth(log, c.StateDir, c.DataDir), m: m, log: log}
	if c.StateRemote != "" {
		mr, err := k.prepareMirror(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		k.mirror = mr
	}
	st, err := state.Open(ctx, c.StateDir, state.Options{Logger: log, Observe: k.observe, Committed: k.committed})
	if err != nil {
		return nil, nil, err
	}
	m.StateWritable(func() bool { return k.health.WriteErr() == nil })
	if k.mirror != nil {
		k.mirror.Start()
	}
	return st, k, nil
}

// prepareMirror restores or checks the state folder against the remote and
// makes the mirror (not started).
func (k *stateKeeper) prepareMirror(ctx context.Context, c *config.Config) (*mirror.Mirror, error) {
	user, token := forgeCredentials(c, c.StateRemote)
	remote, err := mirror.ParseRemote(c.StateRemote, user, token)
	if err != nil {
		return nil, fmt.Errorf("setting ALFRED_STATE_REMOTE: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, prepareFor)
	defer cancel()
	start, err := mirror.Prepare(pctx, c.StateDir, remote, k.log)
	if err != nil {
		return nil, err
	}
	var mr *mirror.Mirror // made next; the gauge is read once serving
	observe := k.m.StateMirror(func() int { return mr.Status().Behind })
	mr = mirror.New(mirror.Options{Dir: c.StateDir, Remote: remote, Start: start, Logger: k.log, Observe: observe})
	k.log.Info("state mirror on", "remote", remote.URL, "restored", start.Restored, "took", start.Took.Round(time.Millisecond))
	return mr, nil
}

// forgeCredentials are the bot's git credentials on the configured forge
// whose host is the remote's: a token is only sent where it comes from.
func forgeCredentials(c *config.Config, remote string) (user, token string) {
	ru, err := url.Parse(remote)
	if err != nil || (ru.Scheme != "http" && ru.Scheme != "https") {
		return "", ""
	}
	for _, f := range c.Forges {
		host, user := forgeGitHost(f)
		if f.Token != "" && strings.EqualFold(host, ru.Hostname()) {
			return user, f.Token
		}
	}
	return "", ""
}

// forgeGitHost is the host a forge serves git from, and the user name git
// gives with the bot's token there.
func forgeGitHost(f config.Forge) (host, user string) {
	k, ok := setup.Of(f.Kind)
	if !ok {
		return "", ""
	}
	return k.GitHost(f.URL)
}

// observe is the store's Observe: it counts the commit and notes whether
// writes fail.
func (k *stateKeeper) observe(took time.Duration, err error) {
	k.m.StateWritten(took, err)
	k.health.Observe(took, err)
}

// committed is the store's Committed: the branch moved, the mirror pushes.
func (k *stateKeeper) committed(string) {
	if k.mirror != nil {
		k.mirror.Notify()
	}
}

// ready wraps the readiness check base with the state's: not ready while
// commits fail or while a disk refuses a small write.
func (k *stateKeeper) ready(base func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if base != nil {
			if err := base(ctx); err != nil {
				return err
			}
		}
		return k.health.Ready()
	}
}

// notes are the mirror's state for /readyz and the home page.
func (k *stateKeeper) notes() []string {
	if k.mirror == nil {
		return nil
	}
	s := k.mirror.Status()
	if s.Err == nil && s.Behind == 0 {
		return []string{"state mirror up to date (" + s.Remote + ")"}
	}
	note := fmt.Sprintf("state mirror behind by %d commits (%s)", s.Behind, s.Remote)
	if s.Behind == 1 {
		note = fmt.Sprintf("state mirror behind by 1 commit (%s)", s.Remote)
	}
	if s.Err != nil {
		note += fmt.Sprintf(": pushes fail since %s (%d tries, next at %s): %v", s.FailingSince.UTC().Format(time.RFC3339),
			s.Failures, s.NextTry.UTC().Format(time.TimeOnly), s.Err)
	}
	return []string{note}
}

// close stops the mirror after one last push of what the store committed
// (call it after the store's Close).
func (k *stateKeeper) close() {
	if k == nil || k.mirror == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.mirror.Close(ctx); err != nil {
		k.log.Warn("state mirror: last push at shutdown failed; it is pushed at the next start", "err", err)
	}
}
