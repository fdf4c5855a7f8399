package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// ErrCorrupt is wrapped by every error reporting a file that is not what a
// Writer writes: damaged, truncated, or not a table file at all.
var ErrCorrupt = errors.New("table: corrupt file")

// File is an open file of tables. It holds the tables' block indexes in
// memory and reads blocks through its io.ReaderAt, which the caller keeps
// open while the File is in use.
type File struct {
	r       io.ReaderAt
	size    int64
	fileCRC uint32 // the footer's checksum of the whole file
	tables  []*Table
	byName  map[string]*Table
}

// Table is one table of a File.
type Table struct {
	f      *File
	name   string
	n      int        // entries
	keys   []byte     // the blocks' first keys, one after another
	blocks []blockRef // in key order
}

// blockRef is a block as a table's index lists it.
type blockRef struct {
	off    int64
	size   uint32 // entries and checksum
	n      uint32 // entries
	keyEnd uint32 // end of the block's first key in Table.keys
}

// footer is the decoded footer of a file.
type footer struct {
	indexOff, dirOff, dirLen uint64
	metaCRC, fileCRC         uint32
}

// dirEntry is a table as the directory lists it.
type dirEntry struct {
	name               string
	n                  uint64
	indexOff, indexLen uint64
}

// Open opens the file of tables that r holds in its first size bytes: it
// reads and checks the footer, the directory and every table's block
// index, and keeps the indexes. Errors reporting a damaged file wrap
// ErrCorrupt.
func Open(r io.ReaderAt, size int64) (*File, error) {
	f, err := open(r, size)
	if err != nil {
		return nil, fmt.Errorf("open table file: %w", err)
	}
	return f, nil
}

func open(r io.ReaderAt, size int64) (*File, error) {
	ft, err := readFooter(r, size)
	if err != nil {
		return nil, err
	}
	if err := checkMeta(r, size, ft); err != nil {
		return nil, err
	}
	meta := make([]byte, uint64(size)-footerSize-ft.indexOff)
	if err := readFull(r, meta, int64(ft.indexOff)); err != nil {
		return nil, err
	}
	dir, err := parseDirectory(meta[ft.dirOff-ft.indexOff:], ft)
	if err != nil {
		return nil, err
	}
	f := &File{r: r, size: size, fileCRC: ft.fileCRC, byName: make(map[string]*Table, len(dir))}
	var next uint64 // where the next block starts
	for _, e := range dir {
		t := &Table{f: f, name: e.name, n: int(e.n)}
		start := e.indexOff - ft.indexOff
		if err := t.parseIndex(meta[start:start+e.indexLen], e.n, &next, ft.indexOff); err != nil {
			return nil, fmt.Errorf("table %q: block index: %w", e.name, err)
		}
		f.tables = append(f.tables, t)
		f.byName[t.name] = t
	}
	if next != ft.indexOff {
		return nil, corrupt("blocks end at %d, block indexes start at %d", next, ft.indexOff)
	}
	return f, nil
}

// readFooter reads and checks the footer of a file of size bytes.
func readFooter(r io.ReaderAt, size int64) (footer, error) {
	if size < footerSize {
		return footer{}, corrupt("file of %d bytes shorter than a footer", size)
	}
	var b [footerSize]byte
	if err := readFull(r, b[:], size-footerSize); err != nil {
		return footer{}, fmt.Errorf("footer: %w", err)
	}
	le := binary.LittleEndian
	ft := footer{
		indexOff: le.Uint64(b[16:]),
		dirOff:   le.Uint64(b[24:]),
		dirLen:   le.Uint64(b[32:]),
		metaCRC:  le.Uint32(b[40:]),
		fileCRC:  le.Uint32(b[44:]),
	}
	body := uint64(size) - footerSize
	switch {
	case !bytes.Equal(b[:8], magic[:]):
		return footer{}, corrupt("footer: bad magic %q", b[:8])
	case le.Uint32(b[8:]) != formatVersion:
		return footer{}, corrupt("footer: format version %d, want %d", le.Uint32(b[8:]), formatVersion)
	case le.Uint32(b[12:]) != 0:
		return footer{}, corrupt("footer: reserved field %#x not zero", le.Uint32(b[12:]))
	case ft.dirOff > body || ft.dirLen != body-ft.dirOff:
		return footer{}, corrupt("footer: directory at %d, %d bytes, does not end at the footer (%d)", ft.dirOff, ft.dirLen, body)
	case ft.indexOff > ft.dirOff:
		return footer{}, corrupt("footer: block indexes at %d after the directory at %d", ft.indexOff, ft.dirOff)
	}
	return ft, nil
}

// checkMeta checks the footer's checksum of the block indexes, the
// directory and the footer, reading them in bounded chunks.
func checkMeta(r io.ReaderAt, size int64, ft footer) error {
	end := size - 8
	buf := make([]byte, min(chunkSize, end-int64(ft.indexOff)))
	var crc uint32
	for off := int64(ft.indexOff); off < end; {
		p := buf[:min(int64(len(buf)), end-off)]
		if err := readFull(r, p, off); err != nil {
			return fmt.Errorf("block indexes and directory: %w", err)
		}
		crc = crc32.Update(crc, castagnoli, p)
		off += int64(len(p))
	}
	if crc != ft.metaCRC {
		return corrupt("block indexes and directory: checksum %#08x, footer says %#08x", crc, ft.metaCRC)
	}
	return nil
}

// parseDirectory decodes the directory b and checks that the tables' names
// are unique and their block indexes follow each other from ft.indexOff to
// the directory.
func parseDirectory(b []byte, ft footer) ([]dirEntry, error) {
	c := cursor{b: b}
	count := c.uvarint()
	if c.bad || count > uint64(len(c.b))/5 {
		return nil, corrupt("directory: table count %d does not fit %d bytes", count, len(b))
	}
	dir := make([]dirEntry, 0, count)
	seen := make(map[string]bool, count)
	next := ft.indexOff
	for i := range count {
		nameLen := c.uvarint()
		name := c.bytes(nameLen)
		e := dirEntry{name: string(name), n: c.uvarint(), indexOff: c.uvarint(), indexLen: c.uvarint()}
		switch {
		case c.bad:
			return nil, corrupt("directory: table %d runs past the directory", i)
		case nameLen == 0 || nameLen > maxNameLen:
			return nil, corrupt("directory: table %d: name of %d bytes", i, nameLen)
		case seen[e.name]:
			return nil, corrupt("directory: table %q listed twice", e.name)
		case e.indexOff != next || e.indexLen > ft.dirOff-next:
			return nil, corrupt("directory: table %q: block index at %d, %d bytes, want it at %d and before %d",
				e.name, e.indexOff, e.indexLen, next, ft.dirOff)
		}
		seen[e.name] = true
		next += e.indexLen
		dir = append(dir, e)
	}
	if len(c.b) != 0 {
		return nil, corrupt("directory: %d bytes after the last table", len(c.b))
	}
	if next != ft.dirOff {
		return nil, corrupt("directory: block indexes end at %d, directory starts at %d", next, ft.dirOff)
	}
	return dir, nil
}

// parseIndex decodes the table's block index b and checks it: blocks
// contiguous from *next (which it advances) and ending by dataEnd, first
// keys increasing, entry counts adding up to n.
func (t *Table) parseIndex(b []byte, n uint64, next *uint64, dataEnd uint64) error {
	if len(b) > math.MaxUint32 {
		return corrupt("%d bytes long", len(b))
	}
	c := cursor{b: b}
	count := c.uvarint()
	if c.bad || count > uint64(len(c.b))/5 {
		return corrupt("block count %d does not fit %d bytes", count, len(b))
	}
	t.blocks = make([]blockRef, 0, count)
	t.keys = make([]byte, 0, len(c.b))
	var prev []byte
	var total uint64
	for i := range count {
		keyLen := c.uvarint()
		key := c.bytes(keyLen)
		off, size, entries := c.uvarint(), c.uvarint(), c.uvarint()
		switch {
		case c.bad:
			return corrupt("block %d runs past the index", i)
		case off != *next:
			return corrupt("block %d at offset %d, want %d", i, off, *next)
		case size < minBlock || size > maxBlock || size > dataEnd-off:
			return corrupt("block %d at offset %d: length %d out of range", i, off, size)
		case keyLen == 0 || keyLen > size-minBlock+1:
			return corrupt("block %d at offset %d: first key of %d bytes", i, off, keyLen)
		case entries == 0 || entries > (size-4)/4:
			return corrupt("block %d at offset %d: %d entries in %d bytes", i, off, entries, size)
		case i > 0 && bytes.Compare(key, prev) <= 0:
			return corrupt("block %d at offset %d: first key not above the previous block's", i, off)
		}
		prev = key
		t.keys = append(t.keys, key...)
		t.blocks = append(t.blocks, blockRef{off: int64(off), size: uint32(size), n: uint32(entries), keyEnd: uint32(len(t.keys))})
		*next += size
		total += entries
	}
	if len(c.b) != 0 {
		return corrupt("%d bytes after the last block", len(c.b))
	}
	if total != n {
		return corrupt("blocks hold %d entries, directory says %d", total, n)
	}
	if cap(t.keys)-len(t.keys) > len(t.keys)/8 {
		t.keys = bytes.Clone(t.keys)
	}
	return nil
}

// Table returns the table named name, or nil if the file has none.
func (f *File) Table(name string) *Table {
	return f.byName[name]
}

// Names returns the names of the file's tables, in the order they were
// written.
func (f *File) Names() []string {
	names := make([]string, len(f.tables))
	for i, t := range f.tables {
		names[i] = t.name
	}
	return names
}

// cursor decodes a byte slice; once a read runs past its end, bad is set
// and every later read returns zero.
type cursor struct {
	b   []byte
	bad bool
}

func (c *cursor) uvarint() uint64 {
	if c.bad {
		return 0
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.bad = true
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *cursor) bytes(n uint64) []byte {
	if c.bad || n > uint64(len(c.b)) {
		c.bad = true
		return nil
	}
	p := c.b[:n]
	c.b = c.b[n:]
	return p
}

// readFull reads len(p) bytes at off; a short read means the file is
// shorter than its size.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return corrupt("%d bytes at offset %d: file ends after %d", len(p), off, n)
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(p), off, err)
}

// corrupt returns an error wrapping ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt)
}
