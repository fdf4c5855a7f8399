package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Format constants; the package documentation describes the layout.
const (
	footerSize       = 48
	formatVersion    = 1
	maxNameLen       = 255
	maxBlock         = 1 << 30 // bytes of a block, entries and checksum
	minBlock         = 3 + 1 + 4
	defaultBlockSize = 4096
	chunkSize        = 1 << 20 // bytes read at once when streaming a file
)

var (
	magic      = [8]byte{'a', 'l', 'f', 'T', 'A', 'B', 'L', 'E'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Writer writes a file of named tables in one pass to an io.Writer: Begin
// starts a table, Add appends its entries in increasing key order, Close
// writes the block indexes, the directory and the footer. It keeps only the
// block indexes and the block being built in memory.
//
// A rejected Begin or Add leaves the Writer as it was; after a failed write
// to the underlying writer every call returns that error.
type Writer struct {
	w         io.Writer
	blockSize int
	off       uint64 // bytes written
	crc       uint32 // checksum of the bytes written
	err       error  // the first write error
	closed    bool
	names     map[string]bool
	tables    []*tableMeta
	block     []byte // entries of the block being built
	blockN    uint64 // and their count
	first     []byte // its first key
	prev      []byte // the current table's last key
}

// tableMeta is what a Writer keeps of a table it writes.
type tableMeta struct {
	name   string
	n      uint64 // entries
	blocks uint64
	index  []byte // the block index, without its block count
}

// NewWriter returns a Writer writing to w blocks of about blockSize bytes of
// entries (a block ends once its entries reach that size). blockSize <= 0
// means 4096; above 1 GiB means 1 GiB.
func NewWriter(w io.Writer, blockSize int) *Writer {
	if blockSize <= 0 {
		blockSize = defaultBlockSize
	}
	blockSize = min(blockSize, maxBlock-4)
	return &Writer{w: w, blockSize: blockSize, names: map[string]bool{}}
}

// Begin ends the current table, if any, and starts the next one, named
// name. Names are non-empty, at most 255 bytes, and unique in a file.
func (w *Writer) Begin(name string) error {
	if err := w.usable(); err != nil {
		return err
	}
	switch {
	case name == "":
		return errors.New("table: begin: empty table name")
	case len(name) > maxNameLen:
		return fmt.Errorf("table: begin %.20q...: name longer than %d bytes", name, maxNameLen)
	case w.names[name]:
		return fmt.Errorf("table: begin %q: table already written", name)
	}
	if err := w.flushBlock(); err != nil {
		return err
	}
	w.names[name] = true
	w.tables = append(w.tables, &tableMeta{name: name})
	w.prev = w.prev[:0]
	return nil
}

// Add appends an entry to the current table. key must be non-empty and
// above the table's previous key (bytes.Compare); value may be empty.
func (w *Writer) Add(key, value []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if len(w.tables) == 0 {
		return errors.New("table: add: no table begun")
	}
	t := w.tables[len(w.tables)-1]
	switch {
	case len(key) == 0:
		return fmt.Errorf("table %q: add: empty key", t.name)
	case t.n > 0 && bytes.Compare(key, w.prev) <= 0:
		return fmt.Errorf("table %q: add %s: key not above the previous key %s", t.name, quote(key), quote(w.prev))
	}
	size := 3*binary.MaxVarintLen64 + len(key) + len(value) + 4
	if size > maxBlock {
		return fmt.Errorf("table %q: add %s: entry of %d bytes larger than a block's limit", t.name, quote(key), size)
	}
	if len(w.block)+size > maxBlock {
		if err := w.flushBlock(); err != nil {
			return err
		}
	}
	shared := 0
	if w.blockN == 0 {
		w.first = append(w.first[:0], key...)
	} else {
		shared = commonPrefix(w.prev, key)
	}
	w.block = binary.AppendUvarint(w.block, uint64(shared))
	w.block = binary.AppendUvarint(w.block, uint64(len(key)-shared))
	w.block = binary.AppendUvarint(w.block, uint64(len(value)))
	w.block = append(w.block, key[shared:]...)
	w.block = append(w.block, value...)
	w.blockN++
	t.n++
	w.prev = append(w.prev[:0], key...)
	if len(w.block) >= w.blockSize {
		return w.flushBlock()
	}
	return nil
}

// Close ends the current table and writes the block indexes, the directory
// and the footer. It does not close the underlying writer. The Writer
// cannot be used afterwards.
func (w *Writer) Close() error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flushBlock(); err != nil {
		return err
	}
	w.closed = true
	indexOff := w.off
	var metaCRC uint32
	dir := binary.AppendUvarint(nil, uint64(len(w.tables)))
	for _, t := range w.tables {
		off := w.off
		count := binary.AppendUvarint(nil, t.blocks)
		if err := w.writeMeta(count, &metaCRC); err != nil {
			return err
		}
		if err := w.writeMeta(t.index, &metaCRC); err != nil {
			return err
		}
		dir = binary.AppendUvarint(dir, uint64(len(t.name)))
		dir = append(dir, t.name...)
		dir = binary.AppendUvarint(dir, t.n)
		dir = binary.AppendUvarint(dir, off)
		dir = binary.AppendUvarint(dir, w.off-off)
	}
	dirOff := w.off
	if err := w.writeMeta(dir, &metaCRC); err != nil {
		return err
	}
	footer := make([]byte, 0, footerSize)
	footer = append(footer, magic[:]...)
	footer = binary.LittleEndian.AppendUint32(footer, formatVersion)
	footer = binary.LittleEndian.AppendUint32(footer, 0)
	footer = binary.LittleEndian.AppendUint64(footer, indexOff)
	footer = binary.LittleEndian.AppendUint64(footer, dirOff)
	footer = binary.LittleEndian.AppendUint64(footer, uint64(len(dir)))
	metaCRC = crc32.Update(metaCRC, castagnoli, footer)
	footer = binary.LittleEndian.AppendUint32(footer, metaCRC)
	footer = binary.LittleEndian.AppendUint32(footer, crc32.Update(w.crc, castagnoli, footer))
	w.tables, w.names, w.block, w.first, w.prev = nil, nil, nil, nil, nil
	return w.write(footer)
}

// usable reports why the Writer cannot take a call, if it cannot.
func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("table: writer closed")
	}
	return nil
}

// flushBlock writes the block being built, if any, and adds it to the
// current table's index.
func (w *Writer) flushBlock() error {
	if w.blockN == 0 {
		return nil
	}
	t := w.tables[len(w.tables)-1]
	off := w.off
	w.block = binary.LittleEndian.AppendUint32(w.block, crc32.Checksum(w.block, castagnoli))
	if err := w.write(w.block); err != nil {
		return err
	}
	t.index = binary.AppendUvarint(t.index, uint64(len(w.first)))
	t.index = append(t.index, w.first...)
	t.index = binary.AppendUvarint(t.index, off)
	t.index = binary.AppendUvarint(t.index, uint64(len(w.block)))
	t.index = binary.AppendUvarint(t.index, w.blockN)
	t.blocks++
	w.block, w.blockN = w.block[:0], 0
	return nil
}

// writeMeta writes p, adding it to the checksum *crc.
func (w *Writer) writeMeta(p []byte, crc *uint32) error {
	*crc = crc32.Update(*crc, castagnoli, p)
	return w.write(p)
}

// write writes p to the underlying writer, adding it to the file's
// checksum; its error sticks.
func (w *Writer) write(p []byte) error {
	n, err := w.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("table: write: %w", err)
		return w.err
	}
	w.crc = crc32.Update(w.crc, castagnoli, p)
	w.off += uint64(len(p))
	return nil
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// quote quotes a key for an error message, shortened to 64 bytes.
func quote(key []byte) string {
	if len(key) > 64 {
		return fmt.Sprintf("%q...", key[:64])
	}
	return fmt.Sprintf("%q", key)
}
