package agents

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// SharedRecords are the records as a command beside the server sees them:
// the server may hold them (the state store's lock), and then only reads
// are allowed. The wiring adapts the state store.
type SharedRecords interface {
	// Open opens the records to write them, until close; held, and no
	// records, when another process (the server) holds them.
	Open(ctx context.Context) (recs Records, close func() error, held bool, err error)
	// Holder is the pid of the process holding the records.
	Holder() (pid int, err error)
	// Read reads the records beside their holder; the error tells of
	// records unreadable, beside those returned.
	Read(ctx context.Context) ([]Record, error)
}

// RefreshWait bounds the wait for the server's detection.
const RefreshWait = 2 * time.Minute

// Refresher is `alfred agents detect --refresh`: the server holding the
// records detects again (asked by SIGHUP), or, when none does, the command
// detects and records itself.
type Refresher struct {
	Store SharedRecords
	Where string // the records' place, for the log (the state folder)
	// Runner and Image say which records the server's detection writes.
	Runner, Image string
	// Ranges are the verified ranges by adapter id, for the table.
	Ranges map[string]string
	Detect DetectFunc
	Signal func(pid int) error // nil: HangUp
	Wait   time.Duration       // how long the server may take; 0: RefreshWait
	Poll   time.Duration       // 0: a second
	Now    func() time.Time    // nil: time.Now
	Log    *slog.Logger
}

// Run detects and records, itself or through the server, and prints what
// was recorded.
func (r Refresher) Run(ctx context.Context, w io.Writer) error {
	if r.Signal == nil {
		r.Signal = HangUp
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.Wait, r.Poll = cmp.Or(r.Wait, RefreshWait), cmp.Or(r.Poll, time.Second)
	recs, closeRecs, held, err := r.Store.Open(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("open the state store to record the detection: %w", err)
	case held:
		return r.viaServer(ctx, w)
	}
	started := r.Now()
	found := r.Detect(ctx)
	err = RecordFound(ctx, recs, found, started)
	if cerr := closeRecs(); err == nil && cerr != nil {
		err = fmt.Errorf("close the state store: %w", cerr)
	}
	if err != nil {
		return err
	}
	r.Log.Info("no server holds the state store: detected and recorded here", "state", r.Where)
	return PrintInstallations(w, found)
}

// viaServer asks the records' holder to detect and prints what it records.
func (r Refresher) viaServer(ctx context.Context, w io.Writer) error {
	pid, err := r.Store.Holder()
	if err != nil {
		return err
	}
	requested := r.Now()
	if err := r.Signal(pid); err != nil {
		return fmt.Errorf("ask the server holding the state store (pid %d) to detect again: %w", pid, err)
	}
	r.Log.Info("asked the server to detect the agents again", "pid", pid)
	recs, err := r.await(ctx, pid, requested)
	if err != nil {
		return err
	}
	insts := make([]Installation, 0, len(recs))
	for _, rec := range recs {
		insts = append(insts, rec.Installation(r.Ranges[rec.AdapterID]))
	}
	return PrintInstallations(w, insts)
}

// await reads the records until they hold installations of this runner and
// image detected after requested.
func (r Refresher) await(ctx context.Context, pid int, requested time.Time) ([]Record, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Wait)
	defer cancel()
	for {
		recs, err := r.detectedSince(ctx, requested)
		if err != nil || len(recs) > 0 {
			return recs, err
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded {
				return nil, fmt.Errorf("the server (pid %d) recorded no detection within %s: it detects the agents only when it serves with a forge (ALFRED_FORGE), and records only the CLIs it finds; see its log", pid, r.Wait)
			}
			return nil, ctx.Err()
		case <-time.After(r.Poll):
		}
	}
}

func (r Refresher) detectedSince(ctx context.Context, since time.Time) ([]Record, error) {
	all, err := r.Store.Read(ctx)
	var out []Record
	for _, a := range all {
		if a.Runner == r.Runner && a.Image == r.Image && a.DetectedAt.After(since) {
			out = append(out, a)
		}
	}
	if len(out) == 0 && err != nil {
		return nil, err
	}
	return out, nil
}

// HangUp sends SIGHUP to pid, once it looks like `alfred serve`: another
// subcommand holding the store for a moment (settings set) has no handler
// for SIGHUP and would end.
func HangUp(pid int) error {
	if args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
		!slices.Contains(strings.Split(string(args), "\x00"), "serve") {
		return fmt.Errorf("pid %d is not `alfred serve` (%s): try again once it has ended", pid, strings.ReplaceAll(strings.TrimRight(string(args), "\x00"), "\x00", " "))
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("send SIGHUP: %w", err)
	}
	return nil
}
