// Package safefs owns reading files an untrusted party could have written:
// what a sandboxed agent left in a folder the bot reads back (a session
// folder, a transcript, an output file). Everything in such a folder is
// data, never a pointer to somewhere else: a file is read only when it is
// a regular file reached without a single symlink, inside the folder, and
// no larger than the caller's limit; anything else is refused with an
// *Error naming the path and what it is.
//
// How a read is bounded:
//
//   - Place: the folder is opened with os.OpenRoot, so no path leaves it;
//     ".." and absolute paths are refused before anything is opened, and
//     every component of the path is Lstat'ed through the root: a symlink
//     anywhere (to /etc/passwd, to /dev/zero, to another file of the folder)
//     is refused (ErrSymlink).
//   - Kind: the final file must be regular (ErrNotRegular for a FIFO, a
//     device, a socket, a folder). It is opened with O_NOFOLLOW, O_NONBLOCK
//     and O_NOCTTY, then fstat'ed: a file swapped for a link or a FIFO
//     between the Lstat and the open is caught on the open descriptor
//     itself, before any byte is read.
//   - Size: a file over the limit is refused from its size, without reading
//     it (a sparse 10 GB file costs one fstat), and a file that grows while
//     read is cut at the limit and refused (ErrTooLarge): never silently
//     truncated.
//   - Time: no deadline is needed. Reading a regular file never waits on
//     the party that wrote it, and nothing else is ever read: opening a
//     FIFO with O_NONBLOCK returns at once (it is then refused by the
//     fstat), and a device is never opened unless swapped in between the
//     Lstat and the open, and then without blocking or becoming the
//     controlling terminal. What remains is the speed of the bot's own disk.
//   - Count: Glob visits at most MaxGlobEntries folder entries and fails
//     past them (ErrTooMany), so a folder of a million files is refused,
//     not walked.
//
// The strict open (O_NOFOLLOW on the final component, through the
// descriptor of its parent) is Linux's; elsewhere the open goes through
// os.Root, which may follow a link swapped in during the race window, but
// only to a file inside the folder, which the fstat then checks.
package safefs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Sentinels of a refusal; an *Error wraps one of them.
var (
	// ErrSymlink: the path or one of its folders is a symlink.
	ErrSymlink = errors.New("symlink refused")
	// ErrNotRegular: the path is a FIFO, a device, a socket or a folder.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than the limit.
	ErrTooLarge = errors.New("file too large")
	// ErrOutside: the path is absolute or leaves the folder ("..").
	ErrOutside = errors.New("path outside the folder")
	// ErrTooMany: a Glob would visit more than MaxGlobEntries entries.
	ErrTooMany = errors.New("too many folder entries")
)

// Error is a refusal: the path asked for (slash-separated, relative to the
// folder; the pattern, for Glob) and what it is. Its text is one sentence
// a person can act on: "x/abc.jsonl is a FIFO, not a regular file".
type Error struct {
	Path string
	// Reason follows the path in the text: "is a symlink", "is under x,
	// which is a symlink", "is 10 GiB, over the 64 MiB limit", …
	Reason string
	// Err is the sentinel: ErrSymlink, ErrNotRegular, ErrTooLarge,
	// ErrOutside or ErrTooMany.
	Err error
}

func (e *Error) Error() string { return e.Path + " " + e.Reason }

// Unwrap returns the sentinel, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

// ReadFile reads the file rel (slash-separated, relative to dir) when it
// is a regular file of at most limit bytes reached without a symlink. A
// refusal is an *Error; a missing file wraps fs.ErrNotExist. See the
// package documentation for what is checked.
func ReadFile(dir, rel string, limit int64) ([]byte, error) {
	t, err := OpenTree(dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return t.ReadFile(rel, limit)
}

// Lstat describes the entry rel of dir itself (never followed), reached
// without a symlinked folder: a symlinked folder on the way is an *Error.
func Lstat(dir, rel string) (fs.FileInfo, error) {
	t, err := OpenTree(dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return t.Lstat(rel)
}

// openRoot opens the folder every path is resolved in.
func openRoot(dir string) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("safefs: open folder %s: %w", dir, err)
	}
	return root, nil
}

// localPath is rel cleaned, or an *Error when it is absolute, empty or
// leaves the folder.
func localPath(rel string) (string, error) {
	clean := path.Clean(rel)
	if path.IsAbs(rel) || !fs.ValidPath(clean) || clean == "." || strings.Contains(rel, "\x00") {
		return "", &Error{Path: fmt.Sprintf("%q", rel), Reason: "is not a path inside the folder", Err: ErrOutside}
	}
	return clean, nil
}

// lstatPath Lstats every component of rel through root: each folder on
// the way must be a real folder (not a symlink). It returns the entry's
// own information (a symlink's, for a symlink). folders, when not nil,
// keeps the folders found real, for the next paths of a Tree.
func lstatPath(root *os.Root, rel string, folders map[string]bool) (fs.FileInfo, error) {
	parts := strings.Split(rel, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if !last && folders[prefix] {
			continue
		}
		fi, err := root.Lstat(prefix)
		if err != nil {
			return nil, pathError("lstat", rel, err)
		}
		switch {
		case last:
			return fi, nil
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, &Error{Path: rel, Reason: "is under " + prefix + ", which is a symlink", Err: ErrSymlink}
		case !fi.IsDir():
			return nil, &Error{Path: rel, Reason: "is under " + prefix + ", which is not a folder", Err: ErrNotRegular}
		}
		if folders != nil {
			folders[prefix] = true
		}
	}
	return nil, pathError("lstat", rel, fs.ErrNotExist) // not reached: rel has a component
}

// Tree looks at many entries of one folder an untrusted party wrote, as
// Lstat does each, the folders found real on the way kept between them: for
// a folder that party no longer writes (its sandbox has ended). It is not
// safe for concurrent use.
type Tree struct {
	root    *os.Root
	folders map[string]bool
}

// OpenTree opens the folder dir.
func OpenTree(dir string) (*Tree, error) {
	root, err := openRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Tree{root: root, folders: map[string]bool{}}, nil
}

// Close closes the folder.
func (t *Tree) Close() error { return t.root.Close() }

// FS walks the folder (fs.WalkDir never follows a symlink).
func (t *Tree) FS() fs.FS { return t.root.FS() }

// Lstat describes the entry rel itself, as Lstat does.
func (t *Tree) Lstat(rel string) (fs.FileInfo, error) {
	clean, err := localPath(rel)
	if err != nil {
		return nil, err
	}
	return lstatPath(t.root, clean, t.folders)
}

// ReadFile reads the file rel of the folder, as ReadFile does.
func (t *Tree) ReadFile(rel string, limit int64) ([]byte, error) {
	fi, err := t.Lstat(rel)
	if err != nil {
		return nil, err
	}
	clean := path.Clean(rel) // valid: Lstat checked it
	if err := checkFile(clean, fi, limit); err != nil {
		return nil, err
	}
	f, err := openFile(t.root, clean)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err = f.Stat() // the file opened, which a swap since the Lstat may have changed
	if err != nil {
		return nil, pathError("fstat", clean, err)
	}
	if err := checkFile(clean, fi, limit); err != nil {
		return nil, err
	}
	return readAll(f, clean, fi.Size(), limit)
}

// Readlink is the target of the symlink rel, never followed.
func (t *Tree) Readlink(rel string) (string, error) {
	if _, err := t.Lstat(rel); err != nil {
		return "", err
	}
	return t.root.Readlink(path.Clean(rel))
}

// checkFile refuses what is not a regular file of at most limit bytes.
func checkFile(rel string, fi fs.FileInfo, limit int64) error {
	m := fi.Mode()
	switch {
	case m.IsRegular() && fi.Size() > limit:
		return &Error{Path: rel, Reason: "is " + Size(fi.Size()) + ", over the " + Size(limit) + " limit", Err: ErrTooLarge}
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		return &Error{Path: rel, Reason: "is a symlink", Err: ErrSymlink}
	}
	return &Error{Path: rel, Reason: "is " + Kind(m) + ", not a regular file", Err: ErrNotRegular}
}

// Kind names a file mode that is not a regular file's ("a FIFO", "a
// character device", ...).
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "of type " + m.Type().String()
}

// readAll reads f, of size bytes when opened, refusing more than limit.
func readAll(f *os.File, rel string, size, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(size, limit)) + 1)
	n, err := buf.ReadFrom(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, pathError("read", rel, err)
	}
	if n > limit {
		return nil, &Error{Path: rel, Reason: "grew over the " + Size(limit) + " limit while read", Err: ErrTooLarge}
	}
	return buf.Bytes(), nil
}

// pathError is err about rel: the underlying error of an *fs.PathError
// (whose path would name the host folder) with rel instead.
func pathError(op, rel string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	if errors.Is(err, syscall.ELOOP) {
		return &Error{Path: rel, Reason: "is a symlink", Err: ErrSymlink}
	}
	return &fs.PathError{Op: op, Path: rel, Err: err}
}

// Size is n bytes for a person: "512 bytes", "64 MiB", "1.5 GiB".
func Size(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, unit := float64(n)/(1<<10), units[0]
	for _, u := range units[1:] {
		if v < 1<<10 {
			break
		}
		v, unit = v/(1<<10), u
	}
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0") + " " + unit
}
