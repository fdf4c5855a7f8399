package table

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Verify reads the whole file, in 1 MiB chunks, and checks the checksum of
// the whole file and every block, as a read of it would. Errors reporting
// damage wrap ErrCorrupt.
func (f *File) Verify() error {
	if err := f.verify(); err != nil {
		return fmt.Errorf("verify table file: %w", err)
	}
	return nil
}

func (f *File) verify() error {
	h := crc32.New(castagnoli)
	br := bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(f.r, 0, f.size-4), h), chunkSize)
	var buf []byte
	var d blockDecoder
	for _, t := range f.tables {
		for i, b := range t.blocks { // blocks are contiguous from offset 0, in this order
			if cap(buf) < int(b.size) {
				buf = make([]byte, b.size)
			}
			p := buf[:b.size]
			if _, err := io.ReadFull(br, p); err != nil {
				return t.blockErr(i, streamErr(err))
			}
			data, err := checkBlock(p)
			if err != nil {
				return t.blockErr(i, err)
			}
			t.decode(&d, i, data, nil)
			for d.next() {
			}
			if d.err != nil {
				return t.blockErr(i, d.err)
			}
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return streamErr(err)
	}
	if got := h.Sum32(); got != f.fileCRC {
		return corrupt("file checksum %#08x, footer says %#08x", got, f.fileCRC)
	}
	return nil
}

// Checksum reads the whole file, in 1 MiB chunks, and checks the checksum
// of the whole file alone: any byte changed since it was written fails it,
// while a block's own checks wait for its first read (Verify makes them
// all). Errors reporting damage wrap ErrCorrupt.
func (f *File) Checksum() error {
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, bufio.NewReaderSize(io.NewSectionReader(f.r, 0, f.size-4), chunkSize)); err != nil {
		return fmt.Errorf("checksum table file: %w", streamErr(err))
	}
	if got := h.Sum32(); got != f.fileCRC {
		return fmt.Errorf("checksum table file: %w", corrupt("file checksum %#08x, footer says %#08x", got, f.fileCRC))
	}
	return nil
}

// streamErr reports an error reading the file as a stream: running out of
// bytes means the file is shorter than its size.
func streamErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("file shorter than its size")
	}
	return fmt.Errorf("read: %w", err)
}
