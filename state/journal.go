package state

// The journal: the synced log in front of the branch (see the package
// documentation, "Writes"). It is one file, {repo}/alfred.journal, written
// in place from its start after each fold and preallocated with zeros, so
// that an append changes no file size and its fdatasync writes the data
// alone. A frame is
//
//	length  uint32  bytes of seq and body
//	crc     uint32  CRC-32C (Castagnoli) of seq and body
//	seq     uint64  the batch's sequence number, one more than the frame before
//	body    count uint32, then per change: op byte (1 put, 2 delete),
//	        path length uint32, path, and for a put JSON length uint32, JSON
//
// all little-endian. What follows the last frame written since a fold is
// zeros or frames of earlier generations (their seq is at most the one
// folded), so a scan stops at the first frame that is not the next one.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// journalName is the journal's file in the repository.
const journalName = "alfred.journal"

// ErrJournalCorrupt is wrapped by Open's error when the journal holds a
// damaged frame followed by valid ones: not the torn tail a crash leaves
// but damage in the middle. Nothing is dropped: Open refuses the store
// until the journal is looked at (move it aside to open the folded branch).
var ErrJournalCorrupt = errors.New("state journal is corrupt")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	frameHead = 16 // length, crc, seq
	opPut     = 1
	opDelete  = 2
	// maxFrame bounds a frame's length field, so a damaged one is not read as a huge frame.
	maxFrame = 1 << 30
)

// journal is the open journal file: appends go at off, the file's
// preallocated size is size.
type journal struct {
	path string
	fd   int
	off  int64
	size int64
}

// journalEntry is one change of a frame.
type journalEntry struct {
	path    string
	raw     []byte
	deleted bool
}

// journalFrame is a decoded frame.
type journalFrame struct {
	seq     uint64
	entries []journalEntry
}

// openJournal opens the journal of repo for writing, creating it with
// prealloc zero bytes (synced, with its folder) when it is missing.
func openJournal(repo string, prealloc int64) (*journal, error) {
	path := filepath.Join(repo, journalName)
	fd, err := retryEINTR(func() (int, error) { return unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0) })
	if errors.Is(err, unix.ENOENT) {
		return createJournal(path, prealloc)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return &journal{path: path, fd: fd, size: st.Size}, nil
}

// createJournal writes a zeroed journal through a temporary file renamed
// into place, so that a crash leaves either none or a whole one.
func createJournal(path string, prealloc int64) (*journal, error) {
	fd, err := replaceFile(path, make([]byte, prealloc), 0o644)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if err := fsyncFD(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := syncDirFD(filepath.Dir(path)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &journal{path: path, fd: fd, size: prealloc}, nil
}

// appendFrame writes frame at the journal's end and syncs its data: the
// durability point of a write. On failure the offset stays, so the next
// append overwrites what was partly written.
func (j *journal) appendFrame(frame []byte) error {
	for done := 0; done < len(frame); {
		n, err := unix.Pwrite(j.fd, frame[done:], j.off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: j.path, Err: err}
		}
		done += n
	}
	if _, err := retryEINTR(func() (int, error) { return 0, unix.Fdatasync(j.fd) }); err != nil {
		return &os.PathError{Op: "sync", Path: j.path, Err: err}
	}
	j.off += int64(len(frame))
	j.size = max(j.size, j.off)
	return nil
}

// fits says whether n more bytes fit in the preallocated file.
func (j *journal) fits(n int) bool { return j.off+int64(n) <= j.size }

// reset starts the next generation at the file's start (after a fold).
func (j *journal) reset() {
	if j != nil {
		j.off = 0
	}
}

func (j *journal) close() error {
	if j == nil || j.fd < 0 {
		return nil
	}
	err := unix.Close(j.fd)
	j.fd = -1
	return err
}

// encodeFrame encodes a batch's changes as frame seq.
func encodeFrame(seq uint64, entries []journalEntry) []byte {
	size := frameHead + 4
	for _, e := range entries {
		size += 1 + 4 + len(e.path) + 4 + len(e.raw)
	}
	b := make([]byte, frameHead, size)
	binary.LittleEndian.PutUint64(b[8:], seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		op := byte(opPut)
		if e.deleted {
			op = opDelete
		}
		b = append(b, op)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.path)))
		b = append(b, e.path...)
		if !e.deleted {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(e.raw)))
			b = append(b, e.raw...)
		}
	}
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)-8))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

// frameAt decodes the frame at off of data; ok is false when none whole
// and intact starts there.
func frameAt(data []byte, off int64) (f journalFrame, next int64, ok bool) {
	if off+frameHead > int64(len(data)) {
		return f, 0, false
	}
	n := int64(binary.LittleEndian.Uint32(data[off:]))
	if n < 12 || n > maxFrame || off+8+n > int64(len(data)) {
		return f, 0, false
	}
	payload := data[off+8 : off+8+n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[off+4:]) {
		return f, 0, false
	}
	f.seq = binary.LittleEndian.Uint64(payload)
	entries, ok := decodeBody(payload[8:])
	f.entries = entries
	return f, off + 8 + n, ok
}

// decodeBody decodes a frame's changes (its checksum already matched).
func decodeBody(b []byte) ([]journalEntry, bool) {
	u32 := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return int(v), int64(v) <= int64(len(b))
	}
	count, ok := u32() // ok: no more entries than bytes left
	if !ok {
		return nil, false
	}
	out := make([]journalEntry, 0, min(count, 1<<16))
	for range count {
		if len(b) < 1 {
			return nil, false
		}
		op := b[0]
		b = b[1:]
		n, ok := u32()
		if !ok || (op != opPut && op != opDelete) {
			return nil, false
		}
		e := journalEntry{path: string(b[:n]), deleted: op == opDelete}
		b = b[n:]
		if !e.deleted {
			if n, ok = u32(); !ok {
				return nil, false
			}
			e.raw = b[:n:n]
			b = b[n:]
		}
		out = append(out, e)
	}
	return out, len(b) == 0
}

// scanJournal returns the frames of data that follow folded: from the
// file's start, frames of an earlier generation (seq at most folded) are
// skipped, then frames folded+1, folded+2... are taken until one is not
// whole, intact and next: the tail, torn or left by an earlier generation.
// A damaged frame followed by the next one intact is damage in the middle
// (ErrJournalCorrupt). end is the offset after the last frame taken (0
// when none is).
func scanJournal(data []byte, folded uint64) (frames []journalFrame, end int64, err error) {
	var off int64
	want := folded + 1
	for {
		f, next, ok := frameAt(data, off)
		if ok && f.seq <= folded && len(frames) == 0 {
			off = next
			continue
		}
		if !ok || f.seq != want {
			if ok || !nextIntact(data, off, want+1) {
				return frames, end, nil
			}
			return frames, end, fmt.Errorf("%w: frame %d at offset %d is damaged and frame %d follows it intact", ErrJournalCorrupt, want, off, want+1)
		}
		frames = append(frames, f)
		off, end, want = next, next, want+1
	}
}

// nextIntact says whether a damaged frame at off, read by its length
// field, is followed by frame seq intact.
func nextIntact(data []byte, off int64, seq uint64) bool {
	if off+frameHead > int64(len(data)) {
		return false
	}
	n := int64(binary.LittleEndian.Uint32(data[off:]))
	if n < 12 || off+8+n > int64(len(data)) {
		return false
	}
	f, _, ok := frameAt(data, off+8+n)
	return ok && f.seq == seq
}

// readJournal reads the journal of repo whole; nil when there is none.
func readJournal(repo string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(repo, journalName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return data, nil
}
