package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Mirror.
type Options struct {
	Dir    string // the state repository
	Remote Remote
	// Start is what Prepare found: a known remote tip is the first push's
	// expected value; otherwise the remote is asked first.
	Start  Start
	Logger *slog.Logger
	// MinBackoff is the wait after a first failed push (default 1s); it
	// doubles with each failure up to MaxBackoff (default 5m), ±20%.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one git command (default 2m).
	Timeout time.Duration
	// Observe, when set, is told of each push tried: its time and error.
	Observe func(took time.Duration, err error)
}

// Status is where the mirror stands.
type Status struct {
	Remote string // the remote's URL, without userinfo
	// Behind counts the commits of the local branch that are not on the
	// last known remote tip.
	Behind    int
	LocalTip  string
	RemoteTip string    // last known ("" when the remote has no branch)
	Pushed    time.Time // last successful push
	// Err is the last try's error while pushes fail (nil otherwise), since
	// FailingSince, after Failures tries; the next is at NextTry.
	Err          error
	FailingSince time.Time
	Failures     int
	NextTry      time.Time
}

// Mirror pushes the state branch to the remote in the background.
type Mirror struct {
	opts  Options
	log   *slog.Logger
	kick  chan struct{}
	stop  chan struct{} // Close: no try after the one in flight
	abort chan struct{} // Close's ctx ended: the try in flight is killed
	done  chan struct{} // the loop ended
	once  sync.Once     // Start
	shut  sync.Once     // Close

	mu       sync.Mutex
	expected string // the remote tip the next push replaces
	known    bool   // expected is known; else the remote is asked first
	status   Status
	counted  [2]string // (local, remote) of status.Behind
}

// New makes a mirror; Start runs it.
func New(opts Options) *Mirror {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Minute, opts.MinBackoff)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	m := &Mirror{opts: opts, log: opts.Logger.With("remote", opts.Remote.URL),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{})}
	m.expected, m.known = opts.Start.RemoteTip, opts.Start.Known
	m.status = Status{Remote: opts.Remote.URL, RemoteTip: opts.Start.RemoteTip}
	return m
}

// Start pushes what the remote lacks, then after each Notify, until Close.
func (m *Mirror) Start() {
	m.once.Do(func() {
		m.Notify()
		go m.run()
	})
}

// Notify tells the mirror the branch moved (a commit batch is durable). It
// never blocks; notices during a push or a backoff are folded into one.
func (m *Mirror) Notify() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Close stops the mirror, letting a push in flight end within ctx; then,
// unless the last try failed, it pushes what is left once more within ctx.
func (m *Mirror) Close(ctx context.Context) error {
	m.once.Do(func() { close(m.done) }) // never started: nothing runs
	first := false
	m.shut.Do(func() { first = true; close(m.stop) })
	if !first {
		return nil
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		close(m.abort)
		<-m.done
		return ctx.Err()
	}
	if m.Status().Err != nil {
		return nil
	}
	_, err := m.push(ctx)
	return err
}

func (m *Mirror) run() {
	defer close(m.done)
	var wait <-chan time.Time // set while backing off: notices wait for it
	for {
		if wait != nil {
			select {
			case <-wait:
			case <-m.stop:
				return
			}
		} else {
			select {
			case <-m.kick:
			case <-m.stop:
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.Timeout)
		go func() {
			select {
			case <-m.abort:
				cancel()
			case <-ctx.Done():
			}
		}()
		t0 := time.Now()
		pushedNow, err := m.push(ctx)
		cancel()
		if m.opts.Observe != nil && (pushedNow || err != nil) {
			m.opts.Observe(time.Since(t0), err)
		}
		wait = nil
		if d := m.settle(err); d > 0 {
			wait = time.After(d)
		}
	}
}

// settle records the result of a try, logs a change between pushing and
// failing once, and returns the wait before the next try (0: none).
func (m *Mirror) settle(err error) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	s := &m.status
	if err == nil {
		if s.Err != nil {
			m.log.Info("state mirror pushes again", "failures", s.Failures, "for", now.Sub(s.FailingSince).Round(time.Second))
		}
		s.Err, s.Failures, s.FailingSince, s.NextTry = nil, 0, time.Time{}, time.Time{}
		return 0
	}
	if s.Err == nil {
		s.FailingSince = now
	}
	first := s.Err == nil
	s.Err = err
	s.Failures++
	d := backoff(m.opts.MinBackoff, m.opts.MaxBackoff, s.Failures)
	s.NextTry = now.Add(d)
	if first {
		m.log.Warn("state mirror push failed; retrying with backoff (logged again once it pushes)", "err", err, "retry_in", d.Round(time.Millisecond))
	} else {
		m.log.Debug("state mirror push failed again", "failures", s.Failures, "err", err, "retry_in", d.Round(time.Millisecond))
	}
	return d
}

// backoff is min doubled per failure after the first, capped at max, ±20%.
func backoff(lo, hi time.Duration, failures int) time.Duration {
	d := lo
	for i := 1; i < failures && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d - d/5 + rand.N(2*d/5+1)
}

// push sends the local branch to the remote if it moved, replacing the
// expected remote tip only. It reports whether it pushed.
func (m *Mirror) push(ctx context.Context) (bool, error) {
	local := readRef(m.opts.Dir)
	if local == "" {
		return false, nil
	}
	m.mu.Lock()
	expected, known := m.expected, m.known
	m.mu.Unlock()
	var err error
	if !known {
		if expected, err = m.learn(ctx, local); err != nil {
			return false, err
		}
	}
	if expected == local {
		return false, nil
	}
	lease := "--force-with-lease=" + branch + ":" + expected
	_, err = git(ctx, m.opts.Remote, m.opts.Dir, m.opts.Remote.config(), "push", "--quiet", "--no-verify", lease, m.opts.Remote.URL, local+":"+branch)
	if err != nil {
		m.forget()
		return false, fmt.Errorf("push state to %s: %w", m.opts.Remote.URL, explain(err, expected))
	}
	m.mu.Lock()
	m.expected, m.known = local, true
	m.status.RemoteTip, m.status.Pushed = local, time.Now()
	m.mu.Unlock()
	if err := recordPushed(m.opts.Dir, m.opts.Remote, local); err != nil {
		m.log.Debug("state mirror", "err", err)
	}
	return true, nil
}

// explain says what a failed push means when git's words are obscure.
func explain(err error, expected string) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "stale info"):
		return fmt.Errorf("%w: the remote branch moved from %s under the mirror: %w", ErrRemoteAhead, short(expected), err)
	case strings.Contains(msg, "could not read Username"), strings.Contains(msg, "Authentication failed"):
		return fmt.Errorf("the remote refused the credentials (HTTP 401: is the token right, and may it push there?): %w", err)
	}
	return err
}

// learn asks the remote where its branch is and checks it is one the
// local branch contains (or the one this directory last pushed).
func (m *Mirror) learn(ctx context.Context, local string) (string, error) {
	remote, err := remoteTip(ctx, m.opts.Remote)
	if err != nil {
		return "", err
	}
	if err := owns(ctx, m.opts.Dir, m.opts.Remote, local, remote); err != nil {
		return "", err
	}
	m.mu.Lock()
	m.expected, m.known = remote, true
	m.status.RemoteTip = remote
	m.mu.Unlock()
	return remote, nil
}

// forget makes the next push ask the remote first: after a failed push
// the remote may hold the commit or not (a connection cut after the update).
func (m *Mirror) forget() {
	m.mu.Lock()
	m.known = false
	m.mu.Unlock()
}

// Status tells where the mirror stands; Behind is counted again when the
// local or the remote tip moved since the last count.
func (m *Mirror) Status() Status {
	local := readRef(m.opts.Dir)
	m.mu.Lock()
	s := m.status
	counted := m.counted
	m.mu.Unlock()
	s.LocalTip = local
	if counted == [2]string{local, s.RemoteTip} {
		return s
	}
	s.Behind = countBehind(m.opts.Dir, local, s.RemoteTip)
	m.mu.Lock()
	if m.status.RemoteTip == s.RemoteTip {
		m.status.Behind, m.counted = s.Behind, [2]string{local, s.RemoteTip}
	}
	m.mu.Unlock()
	return s
}

// countBehind counts the commits of local not in remote (all of local's
// when the remote tip is unknown here, as after a compaction).
func countBehind(dir, local, remote string) int {
	if local == "" || local == remote {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"rev-list", "--count", local}
	if remote != "" {
		if _, err := git(ctx, Remote{}, dir, nil, "cat-file", "-e", remote+"^{commit}"); err == nil {
			args = append(args, "^"+remote)
		}
	}
	out, err := git(ctx, Remote{}, dir, nil, args...)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// readRef reads the loose ref of the branch as the store writes it, or
// asks git when it is packed.
func readRef(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(branch)))
	if h := strings.TrimSpace(string(b)); err == nil && len(h) == 40 {
		return h
	}
	h, _ := localTip(context.Background(), dir)
	return h
}
