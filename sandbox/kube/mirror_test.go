package kube

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The copy-out's tar stream is the agent's: these tests feed crafted
// streams to readCopy and the mirrors (no cluster needed).

// entry is one entry of a crafted copy-out stream.
type entry struct {
	typ            byte
	name, linkname string
	data           string
	size           int64 // the header's size, when not len(data) (a stream cut after the header)
}

// crafted is the tar stream of entries; one whose size exceeds its data
// ends the stream right after its header.
func crafted(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.linkname, Mode: 0o644, ModTime: time.Unix(1700000000, 0), Size: int64(len(e.data))}
		switch e.typ {
		case tar.TypeDir:
			h.Mode = 0o755
		case tar.TypeChar:
			h.Devmajor, h.Devminor = 1, 5
		case tar.TypeBlock:
			h.Devmajor, h.Devminor = 8, 0
		}
		if e.size > 0 {
			h.Size = e.size
		}
		if !carriesData(e.typ) {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > int64(len(e.data)) {
			return buf.Bytes() // the header is written: the stream ends there
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mirrorIn opens a mirror of prefix "session/d" on a new host folder,
// inside a parent folder that must stay as it is, holding old.txt from
// an earlier run; it returns the mirror and the parent.
func mirrorIn(t *testing.T) (*mirror, string) {
	t.Helper()
	parent := t.TempDir()
	host := filepath.Join(parent, "host")
	hostFile(t, filepath.Join(host, "old.txt"), "earlier run\n")
	m := &mirror{prefix: volSession + "/" + subDir, host: host}
	if err := m.open(os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.root.Close() })
	return m, parent
}

func hostFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var testLimits = copyLimits{total: DefaultCopyOutMaxBytes, file: DefaultCopyOutMaxFileBytes}

// readQuickly runs readCopy on r, failing the test after 5 s.
func readQuickly(t *testing.T, r io.Reader, lim copyLimits, mirrors ...*mirror) (copyOut, error) {
	t.Helper()
	done := make(chan readResult, 1)
	go func() {
		out, err := readCopy(r, mirrors, lim, slog.New(slog.DiscardHandler))
		done <- readResult{out, err}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-time.After(5 * time.Second):
		t.Fatal("readCopy still reading after 5 s")
		return copyOut{}, nil
	}
}

// TestCopyOutUntrustedEntries: FIFOs and devices are skipped and noted;
// hard links out of the folder, names leaving it and writes through a
// symlink are refused (the mirror incomplete: nothing removed); symlinks
// are made as links, never followed; nothing is written outside the host
// folder.
func TestCopyOutUntrustedEntries(t *testing.T) {
	m, parent := mirrorIn(t)
	outside := t.TempDir()
	p := "session/d/"
	stream := crafted(t,
		entry{typ: tar.TypeDir, name: p},
		entry{typ: tar.TypeReg, name: p + "a.jsonl", data: "turn\n"},
		entry{typ: tar.TypeFifo, name: p + "fifo"},
		entry{typ: tar.TypeChar, name: p + "zero"},
		entry{typ: tar.TypeBlock, name: p + "sda"},
		entry{typ: tar.TypeSymlink, name: p + "passwd", linkname: "/etc/passwd"},
		entry{typ: tar.TypeSymlink, name: p + "esc", linkname: outside},
		entry{typ: tar.TypeReg, name: p + "esc/planted", data: "through the link\n"},
		entry{typ: tar.TypeLink, name: p + "hard-passwd", linkname: "/etc/passwd"},
		entry{typ: tar.TypeLink, name: p + "hard-up", linkname: p + "../../../etc/passwd"},
		entry{typ: tar.TypeLink, name: p + "hard-in", linkname: p + "a.jsonl"},
		entry{typ: tar.TypeReg, name: p + "../../escape", data: "up\n"},
		entry{typ: tar.TypeReg, name: p + "sub/../../../escape2", data: "up\n"},
		entry{typ: tar.TypeReg, name: "/etc/alfred-test-escape", data: "abs\n"},
	)
	out, err := readQuickly(t, bytes.NewReader(stream), testLimits, m)
	if err != nil {
		t.Fatalf("readCopy: %v (refusals are the mirror's, not the stream's)", err)
	}
	wantSkipped := []string{"session file fifo is a FIFO", "session file zero is a character device", "session file sda is a block device"}
	if !slices.Equal(out.skipped, wantSkipped) {
		t.Errorf("skipped %q, want %q", out.skipped, wantSkipped)
	}
	if b, err := os.ReadFile(filepath.Join(m.host, "a.jsonl")); err != nil || string(b) != "turn\n" {
		t.Errorf("a.jsonl on the host: %q, %v", b, err)
	}
	for _, name := range []string{"fifo", "zero", "sda", "hard-passwd", "hard-up"} {
		if _, err := os.Lstat(filepath.Join(m.host, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is on the host: %v", name, err)
		}
	}
	for link, target := range map[string]string{"passwd": "/etc/passwd", "esc": outside} {
		if got, err := os.Readlink(filepath.Join(m.host, link)); err != nil || got != target {
			t.Errorf("symlink %s on the host: %q, %v; want a link to %q", link, got, err, target)
		}
	}
	if a, h := inode(t, filepath.Join(m.host, "a.jsonl")), inode(t, filepath.Join(m.host, "hard-in")); a != h {
		t.Errorf("hard-in is not a hard link to a.jsonl (inodes %d, %d)", h, a)
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("written through the symlink, outside the host folder: %v", entries)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("written beside the host folder: %v", entries)
	}
	if _, err := os.Lstat("/etc/alfred-test-escape"); err == nil {
		t.Error("an absolute entry was written")
	}
	err = m.finish()
	if err == nil || !strings.Contains(err.Error(), "incomplete, nothing removed (and 4 more entries): session file esc/planted: ") {
		t.Errorf("finish: %v, want the copy-out incomplete, naming the first refused entry", err)
	}
	if _, err := os.Stat(filepath.Join(m.host, "old.txt")); err != nil {
		t.Errorf("old.txt removed from an incomplete copy-out: %v", err)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestCopyOutComplete: a whole stream with a FIFO in it (skipped) makes
// the host folder equal to the Pod's: what the Pod no longer has is
// removed, a host file where the Pod has a FIFO too, and a host symlink
// where the Pod has a file is replaced, not written through.
func TestCopyOutComplete(t *testing.T) {
	m, _ := mirrorIn(t)
	outside := t.TempDir()
	hostFile(t, filepath.Join(outside, "target"), "host file\n")
	hostFile(t, filepath.Join(m.host, "fifo"), "was a file\n")
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(m.host, "link")); err != nil {
		t.Fatal(err)
	}
	p := "session/d/"
	stream := crafted(t,
		entry{typ: tar.TypeDir, name: p},
		entry{typ: tar.TypeReg, name: p + "a.jsonl", data: "turn\n"},
		entry{typ: tar.TypeFifo, name: p + "fifo"},
		entry{typ: tar.TypeReg, name: p + "link", data: "now a file\n"},
	)
	if _, err := readQuickly(t, bytes.NewReader(stream), testLimits, m); err != nil {
		t.Fatal(err)
	}
	if err := m.finish(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"old.txt", "fifo"} {
		if _, err := os.Lstat(filepath.Join(m.host, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, which the Pod does not have, is still on the host: %v", name, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(m.host, "link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link on the host: %v, %v; want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "target")); string(b) != "host file\n" {
		t.Errorf("the symlink's target was written through: %q", b)
	}
}

// TestCopyOutLimits: an entry over the file limit, or a stream over the
// total, ends the copy-out at once with an error naming the entry and the
// limit, before its data is read (a stream that would then block does
// not); what came before stays, nothing is removed.
func TestCopyOutLimits(t *testing.T) {
	p := "session/d/"
	small := copyLimits{total: 4 * (tarHeaderBytes + 1000), file: 2000}
	thousand := strings.Repeat("x", 1000)
	tests := []struct {
		name    string
		lim     copyLimits
		entries []entry
		want    string
		kept    []string
	}{
		{"a 10 GB file", testLimits, []entry{
			{typ: tar.TypeReg, name: p + "first", data: "ok\n"},
			{typ: tar.TypeReg, name: p + "huge", size: 10 << 30},
		}, "copy-out of the Pod's files stopped: session file huge is 10 GiB, over the 512 MiB limit of one file (CopyOutMaxFileBytes); nothing removed from the host folders", []string{"first"}},
		{"a file over the limit", small, []entry{
			{typ: tar.TypeReg, name: p + "big", data: strings.Repeat("x", 2001)},
		}, "session file big is 2001 bytes, over the 2000 bytes limit of one file", nil},
		{"the stderr file over the limit", small, []entry{
			{typ: tar.TypeReg, name: volRun + "/" + subDir + "/stderr", data: strings.Repeat("e", 2001)},
		}, "the agent's stderr is 2001 bytes, over the 2000 bytes limit", nil},
		{"the stream over the total", small, []entry{
			{typ: tar.TypeReg, name: p + "1", data: thousand},
			{typ: tar.TypeReg, name: p + "2", data: thousand},
			{typ: tar.TypeReg, name: p + "3", data: thousand},
			{typ: tar.TypeReg, name: p + "4", data: thousand},
			{typ: tar.TypeReg, name: p + "5", data: thousand},
		}, "stopped at session file 5: the stream goes over the 6048 bytes limit of a copy-out (CopyOutMaxBytes)", []string{"1", "2", "3", "4"}},
		{"many empty entries over the total", small, []entry{
			{typ: tar.TypeDir, name: p + "a/"}, {typ: tar.TypeDir, name: p + "b/"}, {typ: tar.TypeDir, name: p + "c/"},
			{typ: tar.TypeDir, name: p + "d/"}, {typ: tar.TypeDir, name: p + "e/"}, {typ: tar.TypeDir, name: p + "f/"},
			{typ: tar.TypeDir, name: p + "g/"}, {typ: tar.TypeDir, name: p + "h/"}, {typ: tar.TypeDir, name: p + "i/"},
			{typ: tar.TypeDir, name: p + "j/"}, {typ: tar.TypeDir, name: p + "k/"}, {typ: tar.TypeDir, name: p + "l/"},
		}, "stopped at session file l/: the stream goes over", []string{"a", "k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := mirrorIn(t)
			// The crafted stream, then a writer that never ends it: a read
			// past the refused header would block.
			pr, pw := io.Pipe()
			t.Cleanup(func() { pw.Close() })
			go func() { _, _ = pw.Write(crafted(t, tt.entries...)) }()
			_, err := readQuickly(t, pr, tt.lim, m)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("readCopy: %v, want an error with %q", err, tt.want)
			}
			for _, name := range append(tt.kept, "old.txt") {
				if _, err := os.Lstat(filepath.Join(m.host, name)); err != nil {
					t.Errorf("%s: %v; want what came before the refusal kept, nothing removed", name, err)
				}
			}
		})
	}
}

// TestRunnerCopyLimits: the runner's options carry the limits, with their
// defaults.
func TestRunnerCopyLimits(t *testing.T) {
	r := &Runner{opts: withDefaults(Options{})}
	if got := r.copyLimits(); got != (copyLimits{total: 2 << 30, file: 512 << 20}) {
		t.Errorf("default limits %+v", got)
	}
	r = &Runner{opts: withDefaults(Options{CopyOutMaxBytes: 10, CopyOutMaxFileBytes: 5})}
	if got := r.copyLimits(); got != (copyLimits{total: 10, file: 5}) {
		t.Errorf("limits %+v, want the options'", got)
	}
}
