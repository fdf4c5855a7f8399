package kube

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// errPrimedEnded: the primed copy-out's exec ended before it was told to go.
var errPrimedEnded = errors.New("kube: the primed copy-out ended")

// primeRetries bounds how often in a row a primed copy-out that broke
// while the agent runs is opened again, primeOpens how often in all (an
// agent that writes a byte and kills the exec's shell, again and again,
// would make the bot open an exec every backoff for the whole run);
// primeBackoff is the first wait. After them the live stderr stops and the
// copy-out runs as a new exec at the end, which brings the whole file.
const (
	primeRetries = 5
	primeOpens   = 20
	primeBackoff = 250 * time.Millisecond
)

// primedCopy is a copy-out whose exec is opened while the agent runs. Its
// shell in the helper follows the agent's stderr file meanwhile (the exec's
// stderr, up to a mark line), then waits for a line on its stdin and runs
// the copy-out: one exec does both, and nothing in the Pod polls. So the
// end of a run does not wait for a new exec to be set up through the API
// server and the kubelet. When its exec breaks while the agent runs (a
// dropped connection), it is opened again from the stderr bytes passed on
// so far; when it fails after it was told to go, the copy-out runs again
// as a new exec: it is idempotent.
type primedCopy struct {
	r      *Runner
	p      *plan
	log    *slog.Logger
	stderr io.Writer // the agent's stderr as it grows
	told   chan struct{}
	once   sync.Once
	cancel context.CancelFunc
	result chan readResult
}

// primeCopy opens the copy-out of p, which waits and streams the agent's
// stderr to stderr; ctx must outlive a canceled run.
func (r *Runner) primeCopy(ctx context.Context, p *plan, stderr io.Writer, log *slog.Logger) *primedCopy {
	ctx, cancel := context.WithCancel(ctx)
	c := &primedCopy{r: r, p: p, log: log, stderr: stderr, told: make(chan struct{}), cancel: cancel, result: make(chan readResult, 1)}
	go c.loop(ctx)
	return c
}

// loop opens the primed exec until it was told to go, or gives up.
func (c *primedCopy) loop(ctx context.Context) {
	var from int64 // stderr bytes passed on by earlier attempts
	backoff := primeBackoff
	for failures, opens := 0, 1; ; failures, opens = failures+1, opens+1 {
		split := newMarkSplit(c.stderr, c.p.endMark)
		out, err := c.attempt(ctx, split, from)
		if err == nil || c.isTold() || ctx.Err() != nil || failures >= primeRetries || opens >= primeOpens {
			c.result <- readResult{out, err}
			return
		}
		if split.passed > 0 {
			failures, backoff = 0, primeBackoff
		}
		from += split.passed
		c.log.Debug("the primed copy-out broke while the agent runs; opening it again", "stderr_from", from, "err", err)
		select {
		case <-ctx.Done():
		case <-c.told:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, logBackoffMax)
	}
}

// attempt runs one primed exec, its go line fed from c.told.
func (c *primedCopy) attempt(ctx context.Context, split *markSplit, from int64) (copyOut, error) {
	goR, goW := io.Pipe()
	ended := make(chan struct{})
	go func() {
		select {
		case <-c.told:
			_, _ = goW.Write([]byte("go\n"))
			goW.Close()
		case <-ended:
			goW.CloseWithError(errPrimedEnded)
		}
	}()
	out, err := c.r.copyBackAfter(ctx, c.p, &primeStream{start: goR, split: split, from: from}, c.log)
	close(ended)
	goR.CloseWithError(errPrimedEnded) // a stale reader of this attempt's stdin fails at once
	return out, err
}

func (c *primedCopy) isTold() bool {
	select {
	case <-c.told:
		return true
	default:
		return false
	}
}

// run tells the primed copy-out to go and returns its outcome, or that of a
// new copy-out when it failed; ctx bounds either.
func (c *primedCopy) run(ctx context.Context) (copyOut, error) {
	defer c.cancel()
	stop := context.AfterFunc(ctx, c.cancel)
	defer stop()
	c.once.Do(func() { close(c.told) })
	res := <-c.result
	if res.err == nil {
		return res.out, nil
	}
	c.log.Debug("the primed copy-out failed; copying out anew", "err", res.err)
	return c.r.copyBack(ctx, c.p, c.log)
}

// primeStream is what a primed copy-out's exec carries besides the tar: the
// line that starts it, and the agent's stderr from byte from on, up to the
// mark line that split takes out.
type primeStream struct {
	start io.Reader
	split *markSplit
	from  int64
}

// primedScript follows the agent's stderr file from byte $2+1 on the exec's
// stderr until a line arrives on stdin, then writes "\n$1\n" there (the end
// of the agent's stderr: what follows is the copy-out's own) and runs the
// copy-out's tar of the rest of its arguments. Without the line (stdin
// closed), it ends. Until the mark, the exec's stderr carries tail's output
// only (fd 3): the shell's and tail's own messages go nowhere, so the bytes
// counted are the file's.
const primedScript = `exec 3>&2 2>/dev/null
m=$1 o=$(($2 + 1))
shift 2
tail -c +"$o" -f ` + stderrFile + ` >&3 &
t=$!
read -r go || { kill $t; exit 1; }
kill $t
wait $t
exec 2>&3 3>&-
printf '\n%s\n' "$m" >&2
exec tar -cf - -C ` + stageDir + ` "$@"`

// markSplit passes the primed exec's stderr on to out up to the line
// "\nMARK\n" (MARK random for each run), counting what it passed; what
// follows the mark is the copy-out's own messages, kept in msg. A "\n" that
// may start the mark is held back until what follows shows it is not. An
// agent that prints the mark ends its live stderr early: the copy-out
// brings the whole file (output.stderrFrom).
type markSplit struct {
	out    io.Writer
	msg    io.Writer
	mark   []byte
	held   []byte
	seen   bool
	passed int64
}

func newMarkSplit(out io.Writer, mark string) *markSplit {
	return &markSplit{out: out, mark: []byte("\n" + mark + "\n")}
}

// Write is called by one goroutine, the exec's stderr copy.
func (s *markSplit) Write(p []byte) (int, error) {
	if s.seen {
		return s.msg.Write(p)
	}
	data := append(s.held, p...)
	if i := bytes.Index(data, s.mark); i >= 0 {
		s.pass(data[:i])
		s.seen, s.held = true, nil
		_, _ = s.msg.Write(data[i+len(s.mark):])
		return len(p), nil
	}
	k := markStart(data, s.mark)
	s.pass(data[:k])
	s.held = bytes.Clone(data[k:])
	return len(p), nil
}

func (s *markSplit) pass(b []byte) {
	if len(b) > 0 {
		_, _ = s.out.Write(b)
		s.passed += int64(len(b))
	}
}
