package kube

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"
)

// stageCommand extracts the staging tar under stageDir with the modes it
// carries (umask 0), then raises the flag that lets the agent start and
// wakes the postStart hook through its FIFO (a read-write open, which never
// blocks: a line nobody holds the FIFO for is dropped, and the hook then
// sees the flag); once the flag is up it takes nothing more (the agent may
// run).
var stageCommand = []string{"/bin/sh", "-c", "[ -s " + stagedFlag + " ] && exit 0\n" +
	"umask 0 && tar -xf - -C " + stageDir + " && echo $$ >" + stagedFlag + " || exit\n" +
	"[ -p " + stagedFIFO + " ] && echo go 1<>" + stagedFIFO + "\n" +
	"exit 0"}

// stageRetry is how long an exec into the helper (or a request for the
// agent's log) waits before it is tried again, while the watch does not show
// the container running: 50 ms for the first half second (an idle node
// starts a Pod's containers in about that), then half as long again each
// time, up to a second. A busy node takes seconds to make a Pod's sandbox,
// and every refused try costs the API server, the kubelet and the bot a
// connection: at a fixed 50 ms, then 250 ms, 16 runs starting at once made
// 35 to 43 tries each.
func stageRetry(attempt int) time.Duration {
	d := 50 * time.Millisecond
	for i := 10; i <= attempt && d < time.Second; i++ {
		d += d / 2
	}
	return min(d, time.Second)
}

// stage copies stdin, HOME's folders, the worktree, the session folder and
// the tmpfs folders into the Pod's volumes, through a tar stream extracted
// in the helper, whose postStart hook holds the agent back until then. It
// does not wait for the watch to show the helper running (the kubelet
// reports it after the hook, and a start at its next relist, up to a second
// later): once the kubelet has seen the Pod, an exec refused while the watch
// had not shown the helper running is tried again shortly.
func (r *Runner) stage(ctx context.Context, p *plan, w *podWatch) error {
	if _, err := w.until(ctx, seen); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		pod, werr := w.latest()
		up, err := running(ctrHelper)(pod)
		if err != nil {
			return err
		}
		if werr != nil {
			return werr
		}
		err = r.stageOnce(ctx, p)
		if err == nil {
			return nil
		}
		if up || errors.Is(err, errStaging) {
			return fmt.Errorf("kube: stage the run's files: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube: stage the run's files: %w", err)
		case <-time.After(stageRetry(attempt)):
		}
	}
}

// stageOnce streams the staging tar into the helper.
func (r *Runner) stageOnce(ctx context.Context, p *plan) error {
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := r.writeStaging(pw, p)
		pw.CloseWithError(err)
		written <- err
	}()
	err := r.exec(ctx, p.name, ctrHelper, stageCommand, pr, nil)
	pr.Close() // unblocks the writer when tar ended early
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return fmt.Errorf("%w: %w", errStaging, werr)
	}
	return err
}

// errStaging: the staging tar could not be written (a host-side error, not
// worth another attempt).
var errStaging = errors.New("kube: stage the run's files")

// writeStaging writes the staging tar of p: names are relative to stageDir.
func (r *Runner) writeStaging(out io.Writer, p *plan) error {
	tw := &tarWriter{tw: tar.NewWriter(out), uid: p.spec.UID, gid: p.spec.GID, now: time.Now().Truncate(time.Second)}
	tw.dir(volRun+"/"+subDir, 0o700)
	tw.file(volRun+"/"+subDir+"/stdin", 0o600, p.stdin)
	tw.file(volRun+"/"+subDir+"/stderr", 0o600, nil)
	tw.dir(volHome+"/"+subDir, 0o700)
	for _, d := range p.homeDirs {
		tw.dir(volHome+"/"+subDir+"/"+d, 0o700)
	}
	if wt := p.worktree; wt != nil {
		tw.tree(volWorkspace+"/"+subDir, wt.Host)
	}
	if s := p.session; s != nil {
		tw.tree(volSession+"/"+subDir, s.Host)
	}
	for _, t := range p.tmpfs {
		tw.dir(t.name+"/"+subDir, t.Mode)
	}
	r.stageBinds(tw, p)
	if tw.err != nil {
		return tw.err
	}
	return tw.tw.Close()
}

// tarWriter writes entries owned by uid:gid until the first error.
type tarWriter struct {
	tw       *tar.Writer
	uid, gid int
	now      time.Time
	err      error
}

func (w *tarWriter) header(h *tar.Header) bool {
	if w.err != nil {
		return false
	}
	h.Uid, h.Gid = w.uid, w.gid
	if h.ModTime.IsZero() {
		h.ModTime = w.now
	}
	w.err = w.tw.WriteHeader(h)
	return w.err == nil
}

func (w *tarWriter) dir(name string, mode uint32) {
	w.header(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(mode & 0o777)})
}

func (w *tarWriter) file(name string, mode int64, data []byte) {
	if w.header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}) {
		_, w.err = w.tw.Write(data)
	}
}

// tree writes the host folder host under name: folders, regular files and
// symlinks (as symlinks), modes and modification times kept; nothing is
// read outside host.
func (w *tarWriter) tree(name, host string) {
	if w.err != nil {
		return
	}
	root, err := os.OpenRoot(host)
	if err != nil {
		w.err = err
		return
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		w.entry(root, path.Join(name, rel), rel, d)
		return w.err
	})
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("%s: %w", host, err)
	}
}

// entry writes one entry of a tree.
func (w *tarWriter) entry(root *os.Root, name, rel string, d fs.DirEntry) {
	fi, err := d.Info()
	if err != nil {
		w.err = err
		return
	}
	h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime().Truncate(time.Second)}
	switch {
	case fi.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		w.header(h)
	case fi.Mode()&fs.ModeSymlink != 0:
		if h.Linkname, w.err = root.Readlink(rel); w.err == nil {
			h.Typeflag = tar.TypeSymlink
			w.header(h)
		}
	case fi.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		w.copyFile(root, rel, h)
	}
}

// hostFile writes the host file at host (followed if a symlink: the bot's
// own configuration) under name with mode.
func (w *tarWriter) hostFile(name, host string, mode int64) {
	if w.err != nil {
		return
	}
	f, err := os.Open(host)
	if err != nil {
		w.err = err
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		w.err = err
		return
	}
	if w.header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: fi.Size()}) {
		_, w.err = io.CopyN(w.tw, f, fi.Size())
	}
}

func (w *tarWriter) copyFile(root *os.Root, rel string, h *tar.Header) {
	f, err := root.Open(rel)
	if err != nil {
		w.err = err
		return
	}
	defer f.Close()
	if w.header(h) {
		_, w.err = io.CopyN(w.tw, f, h.Size)
	}
}
