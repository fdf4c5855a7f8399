// Package table owns an immutable file format of named, sorted key/value
// tables. A Writer writes such a file in one pass; a File reads it back
// through an io.ReaderAt by point lookups (Table.Get) and ordered scans
// (Table.Ascend, Table.Prefix). An open File holds in memory only each
// table's block index (the first key, offset, length and entry count of
// every block), so a store can keep most of its index on disk: a lookup
// searches that index and reads one block with one ReadAt.
//
// A File is safe for concurrent use when its io.ReaderAt is (as *os.File
// and *bytes.Reader are). A Writer is not.
//
// # Layout
//
// "uvarint" is encoding/binary's unsigned varint; fixed-size integers are
// little-endian; every checksum is a CRC-32C (Castagnoli). A file is, in
// this order and with no gaps:
//
//	data blocks     every table's blocks, table after table, from offset 0
//	block indexes   one per table, in the same order
//	directory       the tables, in the order they were written
//	footer          48 bytes
//
// A data block holds one or more entries of one table in strictly
// increasing key order (bytes.Compare), followed by a uint32 checksum of
// those entries. An entry is
//
//	uvarint  shared: how many leading bytes the key shares with the
//	         previous entry's key in the block (0 for the block's first)
//	uvarint  unshared: the length of the rest of the key (at least 1)
//	uvarint  the value's length
//	bytes    the rest of the key, then the value
//
// shared is always the longest common prefix of the two keys, so a key is
// above its predecessor exactly when its first unshared byte is above the
// predecessor's byte at that position (or the predecessor is a prefix of
// it): a reader checks the order of keys without comparing them. The writer
// ends a block once its entries reach the target block size; an entry
// larger than that gets a block of its own. A block is at most 1 GiB.
//
// A table's block index is a uvarint block count, then for each block:
//
//	uvarint  length of the block's first key
//	bytes    the block's first key
//	uvarint  the block's offset
//	uvarint  the block's length (entries and checksum)
//	uvarint  the block's entry count
//
// The directory is a uvarint table count, then for each table:
//
//	uvarint  length of the name (1 to 255)
//	bytes    the name
//	uvarint  the table's entry count
//	uvarint  the offset of the table's block index
//	uvarint  the length of the table's block index
//
// The footer is
//
//	[8]byte  magic "alfTABLE"
//	uint32   format version, 1
//	uint32   reserved, 0
//	uint64   offset of the first block index (the end of the data blocks)
//	uint64   offset of the directory
//	uint64   length of the directory
//	uint32   checksum of the bytes from the first block index to this
//	         field: the block indexes, the directory and the footer so far
//	uint32   checksum of every byte of the file before this field
//
// # Checks
//
// Open reads the footer, checks its magic, version and offsets, the
// checksum of the block indexes and directory (streamed in 1 MiB chunks
// before anything of their size is allocated), and that the directory and
// indexes decode exactly: names unique, index sections and blocks in file
// order and contiguous, every offset and length inside the file, first keys
// strictly increasing within a table, and block entry counts adding up to
// the table's. Reading a block checks its checksum, and decoding it checks
// that each entry lies within the block, that the first key is the
// index's, that keys strictly increase and stay below the next block's
// first key, and, at the block's end, that it held the index's entry count
// (Get decodes a block up to the key it looks for; Ascend and Verify decode
// whole blocks). Verify reads the whole file in 1 MiB chunks and checks the
// whole-file checksum and every block. Every failed
// check gives an error wrapping ErrCorrupt; no length read from the file
// makes a reader allocate more than the file's size.
package table
