package safefs

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickly runs f and fails t when it takes more than 5 s: a read that
// blocks (on a FIFO, on /dev/zero) must fail the test, not hang it.
func quickly(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still reading after 5 s: the read blocks")
	}
}

// mkfifo makes a FIFO at p.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// TestReadFile: a regular file inside the folder, at most max bytes, is
// read whole; a symlink anywhere on the path, a FIFO, a device, a socket,
// a folder, a file over max (a sparse 10 GB one in one fstat) and a path
// leaving the folder are refused with the sentinel and a sentence naming
// the path, each at once.
func TestReadFile(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), "host secret\n")
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		rel     string
		max     int64
		want    string // the content read, when no error
		wantErr error
		reason  string // in the error's text
	}{
		{name: "regular file", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "a.jsonl"), "one\ntwo\n") },
			rel: "a.jsonl", max: 1 << 20, want: "one\ntwo\n"},
		{name: "nested regular file", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "x/y/b.jsonl"), "deep") },
			rel: "x/y/b.jsonl", max: 1 << 20, want: "deep"},
		{name: "exactly the limit", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "a"), "12345") },
			rel: "a", max: 5, want: "12345"},
		{name: "empty file", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "a"), "") },
			rel: "a", max: 5, want: ""},
		{name: "one byte over the limit", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "a"), "123456") },
			rel: "a", max: 5, wantErr: ErrTooLarge, reason: "a is 6 bytes, over the 5 bytes limit"},
		{name: "sparse 10 GB file", setup: func(t *testing.T, d string) {
			write(t, filepath.Join(d, "big.jsonl"), "")
			if err := os.Truncate(filepath.Join(d, "big.jsonl"), 10<<30); err != nil {
				t.Fatal(err)
			}
		}, rel: "big.jsonl", max: 64 << 20, wantErr: ErrTooLarge, reason: "big.jsonl is 10 GiB, over the 64 MiB limit"},
		{name: "symlink to /etc/passwd", setup: func(t *testing.T, d string) { symlink(t, "/etc/passwd", filepath.Join(d, "p")) },
			rel: "p", max: 1 << 20, wantErr: ErrSymlink, reason: "p is a symlink"},
		{name: "symlink to /dev/zero", setup: func(t *testing.T, d string) { symlink(t, "/dev/zero", filepath.Join(d, "z")) },
			rel: "z", max: 1 << 20, wantErr: ErrSymlink, reason: "z is a symlink"},
		{name: "symlink to a host file", setup: func(t *testing.T, d string) { symlink(t, filepath.Join(outside, "secret"), filepath.Join(d, "s")) },
			rel: "s", max: 1 << 20, wantErr: ErrSymlink, reason: "s is a symlink"},
		{name: "symlink inside the folder", setup: func(t *testing.T, d string) {
			write(t, filepath.Join(d, "real"), "x")
			symlink(t, "real", filepath.Join(d, "alias"))
		}, rel: "alias", max: 1 << 20, wantErr: ErrSymlink, reason: "alias is a symlink"},
		{name: "symlinked parent folder", setup: func(t *testing.T, d string) { symlink(t, outside, filepath.Join(d, "proj")) },
			rel: "proj/secret", max: 1 << 20, wantErr: ErrSymlink, reason: "proj/secret is under proj, which is a symlink"},
		{name: "symlinked grandparent folder", setup: func(t *testing.T, d string) { symlink(t, outside, filepath.Join(d, "a/proj")) },
			rel: "a/proj/secret", max: 1 << 20, wantErr: ErrSymlink, reason: "is under a/proj, which is a symlink"},
		{name: "FIFO", setup: func(t *testing.T, d string) { mkfifo(t, filepath.Join(d, "f.jsonl")) },
			rel: "f.jsonl", max: 1 << 20, wantErr: ErrNotRegular, reason: "f.jsonl is a FIFO, not a regular file"},
		{name: "socket", setup: socketAt("s.sock"), rel: "s.sock", max: 1 << 20, wantErr: ErrNotRegular, reason: "is a socket, not a regular file"},
		{name: "folder", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "dir/x"), "") },
			rel: "dir", max: 1 << 20, wantErr: ErrNotRegular, reason: "dir is a folder, not a regular file"},
		{name: "file as a folder", setup: func(t *testing.T, d string) { write(t, filepath.Join(d, "f"), "") },
			rel: "f/x", max: 1 << 20, wantErr: ErrNotRegular, reason: "f/x is under f, which is not a folder"},
		{name: "dot-dot escape", rel: "../" + filepath.Base(outside) + "/secret", max: 1 << 20, wantErr: ErrOutside, reason: "is not a path inside the folder"},
		{name: "dot-dot inside then out", rel: "a/../../x", max: 1 << 20, wantErr: ErrOutside},
		{name: "absolute path", rel: "/etc/passwd", max: 1 << 20, wantErr: ErrOutside},
		{name: "the folder itself", rel: ".", max: 1 << 20, wantErr: ErrOutside},
		{name: "missing file", rel: "none.jsonl", max: 1 << 20, wantErr: fs.ErrNotExist, reason: "none.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			var got []byte
			var err error
			quickly(t, func() { got, err = ReadFile(dir, tt.rel, tt.max) })
			if tt.wantErr == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadFile(%q) = %q, %v; want %q", tt.rel, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || got != nil {
				t.Fatalf("ReadFile(%q) = %q, %v; want nothing and %v", tt.rel, got, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.reason) || strings.Contains(err.Error(), dir) {
				t.Errorf("error %q: want it to say %q, without the host folder %s", err, tt.reason, dir)
			}
		})
	}
}

// socketAt makes a unix socket at rel of the folder.
func socketAt(rel string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		l, err := net.Listen("unix", filepath.Join(dir, rel))
		if err != nil {
			t.Fatalf("no unix socket in %s: %v", dir, err)
		}
		t.Cleanup(func() { l.Close() })
	}
}

// TestReadFileDevice: a character device node (made when the test may)
// is refused, not opened.
func TestReadFileDevice(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "zero")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|5); err != nil { // 1:5 is /dev/zero
		if os.Geteuid() == 0 { // the suite runs as root: a device must be made
			t.Fatalf("make a device node: %v", err)
		}
		t.Skipf("making a device node needs root: %v", err)
	}
	var err error
	quickly(t, func() { _, err = ReadFile(dir, "zero", 1<<20) })
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "zero is a character device, not a regular file") {
		t.Fatalf("ReadFile of a device: %v, want ErrNotRegular", err)
	}
}

// TestOpenCatchesSwaps: what the Lstat would have refused, swapped in
// before the open, is caught on the open itself: a symlink is not followed
// (ELOOP), a FIFO opens without waiting for a writer and its fstat says it
// is no regular file.
func TestOpenCatchesSwaps(t *testing.T) {
	dir := t.TempDir()
	symlink(t, "/etc/passwd", filepath.Join(dir, "p"))
	mkfifo(t, filepath.Join(dir, "f"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	quickly(t, func() {
		if f, err := openFile(root, "p"); !errors.Is(err, ErrSymlink) {
			if f != nil {
				f.Close()
			}
			t.Errorf("open of a symlink: %v, want ErrSymlink", err)
		}
		f, err := openFile(root, "f")
		if err != nil {
			t.Errorf("open of a FIFO: %v", err)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkFile("f", fi, 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Errorf("fstat check of a FIFO: %v, want ErrNotRegular", err)
		}
	})
}

// TestReadAllGrown: a file that grew past the limit after its fstat is
// refused, not cut.
func TestReadAllGrown(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), strings.Repeat("x", 100))
	f, err := os.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := readAll(f, "a", 10, 50); !errors.Is(err, ErrTooLarge) || b != nil || !strings.Contains(err.Error(), "grew over the 50 bytes limit") {
		t.Fatalf("readAll of a grown file = %d bytes, %v; want ErrTooLarge", len(b), err)
	}
}

// TestLstat: an entry is described, not followed; a symlinked folder on
// the way is refused.
func TestLstat(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	symlink(t, "/etc/passwd", filepath.Join(dir, "a/p"))
	symlink(t, outside, filepath.Join(dir, "b"))
	write(t, filepath.Join(outside, "x"), "")
	if fi, err := Lstat(dir, "a/p"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat of a symlink: %v, %v; want the link itself", fi, err)
	}
	if _, err := Lstat(dir, "b/x"); !errors.Is(err, ErrSymlink) {
		t.Errorf("Lstat under a symlinked folder: %v, want ErrSymlink", err)
	}
}

// TestGlob: matches are relative and sorted; a symlinked folder is not
// walked; a final component matches anything but a folder (a FIFO and a
// symlink are returned, for ReadFile to refuse); malformed or escaping
// patterns are errors.
func TestGlob(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "x.jsonl"), "host")
	write(t, filepath.Join(dir, "b/x.jsonl"), "")
	write(t, filepath.Join(dir, "a/x.jsonl"), "")
	write(t, filepath.Join(dir, "a/x.txt"), "")
	symlink(t, outside, filepath.Join(dir, "link"))
	symlink(t, "../a", filepath.Join(dir, "inner-link"))
	if err := os.Mkdir(filepath.Join(dir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(dir, "c/fifo.jsonl"))
	symlink(t, "/etc/passwd", filepath.Join(dir, "d/sym.jsonl"))
	write(t, filepath.Join(dir, "e/folder.jsonl/inner"), "")
	write(t, filepath.Join(dir, "top.jsonl"), "")
	var got []string
	var err error
	quickly(t, func() { got, err = Glob(dir, "*/*.jsonl") })
	want := []string{"a/x.jsonl", "b/x.jsonl", "c/fifo.jsonl", "d/sym.jsonl"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Glob = %q, %v; want %q", got, err, want)
	}
	if got, err := Glob(dir, "a/x.*"); err != nil || !slices.Equal(got, []string{"a/x.jsonl", "a/x.txt"}) {
		t.Errorf("Glob of a literal folder = %q, %v", got, err)
	}
	if got, err := Glob(dir, "none/*"); err != nil || len(got) != 0 {
		t.Errorf("Glob of a missing folder = %q, %v; want no match", got, err)
	}
	for _, p := range []string{"../*", "/etc/*", "a/../../*", "a//x", "[", ""} {
		if got, err := Glob(dir, p); err == nil {
			t.Errorf("Glob(%q) = %q, want an error", p, got)
		}
	}
}

// TestGlobBounded: a folder of more than MaxGlobEntries entries is
// refused, not listed whole.
func TestGlobBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxGlobEntries + 1 {
		f, err := os.Create(filepath.Join(dir, "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	_, err := Glob(dir, "*.jsonl")
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "*.jsonl goes through over 10000 folder entries") {
		t.Fatalf("Glob of a huge folder: %v, want ErrTooMany", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 512: "512 bytes", 1 << 10: "1 KiB", 64 << 20: "64 MiB", 10 << 30: "10 GiB", 1536 << 20: "1.5 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTree: many paths of one folder, as Lstat sees each: a symlinked
// folder on the way is refused, a link is described and read, never
// followed.
func TestTree(t *testing.T) {
	dir, host := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(host, "f"), []byte("host"), 0o644)
	os.Symlink(host, filepath.Join(dir, "out"))
	os.Symlink("b/f", filepath.Join(dir, "a", "l"))
	tr, err := OpenTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for range 2 { // the second time from the kept folders
		if fi, err := tr.Lstat("a/b/f"); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("a/b/f: %v %v", fi, err)
		}
	}
	if _, err := tr.Lstat("out/f"); !errors.Is(err, ErrSymlink) {
		t.Errorf("out/f through a symlinked folder: %v", err)
	}
	if target, err := tr.Readlink("a/l"); err != nil || target != "b/f" {
		t.Errorf("Readlink(a/l) = %q, %v", target, err)
	}
	if _, err := tr.Readlink("out/f"); !errors.Is(err, ErrSymlink) {
		t.Errorf("Readlink through a symlinked folder: %v", err)
	}
	if _, err := tr.Lstat("../x"); !errors.Is(err, ErrOutside) {
		t.Errorf("../x: %v", err)
	}
}
