package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/internal/tunnel"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Binds. A Pod, maybe on another node, cannot bind a path of the bot's
// machine, so the runner carries the two kinds of Spec.Binds the engine makes
// for a sealed run into the Pod:
//   - a regular file (the gateway's forwarder) is staged like the worktree,
//     read-only when the bind is (its write bits cleared);
//   - a unix socket (the model gateway's) is relayed: in the helper
//     container `alfred-forward -relay PATH` listens on the socket's path in
//     the Pod and carries each connection over its exec stream, through the
//     API server, to the bot, which connects it to the socket on its side
//     (internal/tunnel). The Pod needs no network for it: a sealed run keeps
//     its deny-all NetworkPolicy.
// The binds of one folder share a volume mounted at that folder in the agent.

// bindDir is a folder of the agent container holding binds.
type bindDir struct {
	name    string // the volume's
	dir     string
	files   []bindFile
	sockets []bindSocket
}

type bindFile struct {
	base, host string
	mode       int64
}

type bindSocket struct{ base, host string }

// relayTimeout bounds the end of a relay once the agent ended.
const relayTimeout = 5 * time.Second

// addBind files bind m under the folder of its container path.
func (p *plan) addBind(m sandbox.LayoutMount) error {
	fi, err := os.Stat(m.Host)
	if err != nil {
		return fmt.Errorf("kube: bind %s: %w", m.Host, err)
	}
	dir, base := path.Split(path.Clean(m.Container))
	dir = path.Clean(dir)
	if dir == "/" {
		return fmt.Errorf("kube: bind at %s: its folder / cannot be a volume of the Pod", m.Container)
	}
	bd := p.bindDirFor(dir)
	switch {
	case fi.Mode()&os.ModeSocket != 0:
		bd.sockets = append(bd.sockets, bindSocket{base: base, host: m.Host})
	case fi.Mode().IsRegular():
		mode := int64(fi.Mode().Perm())
		if m.ReadOnly {
			mode &^= 0o222
		}
		bd.files = append(bd.files, bindFile{base: base, host: m.Host, mode: mode})
	default:
		return fmt.Errorf("kube: bind %s: only a file or a unix socket can be carried into a Pod (%s)", m.Host, fi.Mode().Type())
	}
	return nil
}

func (p *plan) bindDirFor(dir string) *bindDir {
	for i := range p.binds {
		if p.binds[i].dir == dir {
			return &p.binds[i]
		}
	}
	p.binds = append(p.binds, bindDir{name: fmt.Sprintf("bind-%d", len(p.binds)), dir: dir})
	return &p.binds[len(p.binds)-1]
}

// relayed tells whether the run relays a socket.
func (p *plan) relayed() bool {
	for _, bd := range p.binds {
		if len(bd.sockets) > 0 {
			return true
		}
	}
	return false
}

// stageBinds writes the bind folders and files, and the relay's binary when
// the runner brings its own.
func (r *Runner) stageBinds(w *tarWriter, p *plan) {
	for _, bd := range p.binds {
		w.dir(bd.name+"/"+subDir, 0o755)
		for _, f := range bd.files {
			w.hostFile(bd.name+"/"+subDir+"/"+f.base, f.host, f.mode)
		}
	}
	if r.opts.Relay != "" && p.relayed() {
		w.hostFile(volRun+"/"+relayName, r.opts.Relay, 0o555)
	}
}

// relayName is the relay's binary in the run volume, when the runner brings it.
const relayName = "alfred-forward"

// relayCommand is how the helper starts the relay of the socket at target.
func (r *Runner) relayCommand(target string) []string {
	bin := relayName // the image's, on its PATH
	if r.opts.Relay != "" {
		bin = stageDir + "/" + volRun + "/" + relayName
	}
	return []string{bin, "-relay", target}
}

// relaySet is the relays of a run.
type relaySet struct {
	once sync.Once
	ends []func()
}

// startRelays starts the relay of each socket bind; the helper runs (it took
// the staging).
func (r *Runner) startRelays(ctx context.Context, p *plan, log *slog.Logger) *relaySet {
	set := &relaySet{}
	for _, bd := range p.binds {
		for _, s := range bd.sockets {
			target := stageDir + "/" + bd.name + "/" + subDir + "/" + s.base
			set.ends = append(set.ends, r.relay(ctx, p.name, target, s.host, log))
		}
	}
	return set
}

// relay carries the socket at target in the Pod to host; the returned
// function ends it.
func (r *Runner) relay(ctx context.Context, pod, target, host string, log *slog.Logger) func() {
	inR, inW := io.Pipe()   // to the relay's stdin
	outR, outW := io.Pipe() // from its stdout
	done := make(chan struct{})
	go func() {
		_ = tunnel.Dial(outR, inW, func() (net.Conn, error) { return net.Dial("unix", host) })
	}()
	go func() {
		defer close(done)
		defer outW.Close()
		if err := r.exec(ctx, pod, ctrHelper, r.relayCommand(target), inR, outW); err != nil {
			log.Warn("the model gateway's relay ended", "socket", target, "err", err)
		}
	}()
	return func() {
		_ = inW.Close() // the relay's stdin ends: it exits
		select {
		case <-done:
		case <-time.After(relayTimeout):
			log.Warn("the relay did not end with its stdin", "socket", target)
		}
		_ = outR.Close()
	}
}

// stop ends every relay, once.
func (s *relaySet) stop() {
	s.once.Do(func() {
		for _, end := range s.ends {
			end()
		}
	})
}
