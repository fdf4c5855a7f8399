package state

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// packInfo describes one pack in objects/pack.
type packInfo struct {
	name    string // "pack-<hash>"
	objects int
	pinned  bool // holds deltas: never merged
}

// packWriter streams non-delta objects into a git pack (version 2) and
// keeps what the .idx needs. A commit's pack stays in memory until finish
// and reaches the file in one write; a merge's is flushed as it grows.
type packWriter struct {
	f       *os.File
	sum     hash.Hash
	buf     []byte
	offset  int64 // of the next entry
	entries []idxEntry
}

const packFlushAt = 1 << 20

func newPackWriter(f *os.File, count int) *packWriter {
	pw := &packWriter{f: f, sum: sha1.New(), entries: make([]idxEntry, 0, count), buf: make([]byte, 0, 8<<10)}
	pw.buf = append(pw.buf, "PACK"...)
	pw.buf = binary.BigEndian.AppendUint32(pw.buf, 2)
	pw.buf = binary.BigEndian.AppendUint32(pw.buf, uint32(count))
	pw.offset = 12
	return pw
}

func (pw *packWriter) add(typ plumbing.ObjectType, h plumbing.Hash, data []byte) error {
	start := len(pw.buf)
	size := len(data)
	b := byte(typ)<<4 | byte(size&0x0f)
	for size >>= 4; size > 0; size >>= 7 {
		pw.buf = append(pw.buf, b|0x80)
		b = byte(size & 0x7f)
	}
	pw.buf = append(pw.buf, b)
	pw.buf = appendStoredZlib(pw.buf, data)
	entry := pw.buf[start:]
	pw.entries = append(pw.entries, idxEntry{hash: h, off: uint64(pw.offset), crc: crc32.ChecksumIEEE(entry)})
	pw.offset += int64(len(entry))
	if len(pw.buf) >= packFlushAt && pw.f != nil {
		return pw.flush()
	}
	return nil
}

// appendStoredZlib appends data as a zlib stream of stored (uncompressed)
// deflate blocks. Records are small JSON files: compressing them saves
// little disk for the CPU it costs on every commit and every Open, where
// inflating stored blocks is a copy. `git gc` may recompress the branch.
func appendStoredZlib(dst, data []byte) []byte {
	sum := adler32.Checksum(data)
	dst = append(dst, 0x78, 0x01) // deflate, 32 KiB window, fastest level
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), 0xffff)
		final := byte(0)
		if n == len(data) {
			final = 1
		}
		dst = append(dst, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		dst = append(dst, data[:n]...)
		data = data[n:]
	}
	return binary.BigEndian.AppendUint32(dst, sum)
}

// addRaw copies an entry (header and compressed data) from another pack.
func (pw *packWriter) addRaw(h plumbing.Hash, entry []byte, crc uint32) error {
	pw.entries = append(pw.entries, idxEntry{hash: h, off: uint64(pw.offset), crc: crc})
	pw.offset += int64(len(entry))
	if len(pw.buf)+len(entry) <= packFlushAt || pw.f == nil {
		pw.buf = append(pw.buf, entry...)
		return nil
	}
	if err := pw.flush(); err != nil {
		return err
	}
	pw.sum.Write(entry)
	_, err := pw.f.Write(entry)
	return err
}

func (pw *packWriter) flush() error {
	pw.sum.Write(pw.buf)
	_, err := pw.f.Write(pw.buf)
	pw.buf = pw.buf[:0]
	return err
}

// finish writes the trailer and returns the pack checksum and its index.
// Without a file the whole pack is left in pw.buf.
func (pw *packWriter) finish() (plumbing.Hash, []byte, error) {
	var sum plumbing.Hash
	pw.sum.Write(pw.buf)
	pw.sum.Sum(sum[:0])
	pw.buf = append(pw.buf, sum[:]...)
	if pw.f != nil {
		if _, err := pw.f.Write(pw.buf); err != nil {
			return sum, nil, err
		}
	}
	idx, err := encodeIdx(pw.entries, sum)
	return sum, idx, err
}

// packDir is objects/pack of the repository.
func packDir(repo string) string { return filepath.Join(repo, "objects", "pack") }

// writeCommitPack writes the objects of a commit as one pack, built in
// memory, and its index into objects/pack, then fsyncs the pack: the
// commit's first sync. The pack is written under its final name (git and
// the store ignore a pack without an index, and listPacks removes a torn
// one), the index through a temporary file renamed, so that a reader never
// sees it partial. The pack's name and the index
// are not synced: the ref's folder sync, the commit's second, commits them
// with it where the file system keeps its metadata in order (ext4's and
// XFS's journal), and an index found missing or damaged is rebuilt from
// its pack (see listPacks).
func writeCommitPack(repo string, objs []gitObject) (packInfo, error) {
	pw := newPackWriter(nil, len(objs))
	size := 12 + 20
	for _, o := range objs {
		size += len(o.data) + 32 + len(o.data)/0xffff*5
	}
	pw.buf = slices.Grow(pw.buf, size)
	for _, o := range objs {
		pw.add(o.typ, o.hash, o.data) // cannot fail without a file
	}
	sum, idx, err := pw.finish()
	if err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	name := "pack-" + sum.String()
	base := filepath.Join(packDir(repo), name)
	fd, err := installNew(base+".pack", pw.buf, 0o444)
	if err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	defer unix.Close(fd)
	xfd, err := replaceFile(base+".idx", idx, 0o444) // appears whole: git reads it
	if err != nil {
		return packInfo{}, fmt.Errorf("write pack index: %w", err)
	}
	unix.Close(xfd)
	if err := fsyncFD(fd, base+".pack"); err != nil {
		return packInfo{}, err
	}
	return packInfo{name: name, objects: len(objs)}, nil
}

// writePack streams a pack (a merge of others) and its index into
// objects/pack and syncs the pack, the index and the folder. produce is
// called with a packWriter expecting count objects of size bytes in all.
func writePack(repo string, count int, size int64, produce func(*packWriter) error) (packInfo, error) {
	dir := packDir(repo)
	pf, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return packInfo{}, fmt.Errorf("create pack: %w", err)
	}
	tmp := pf.Name()
	defer func() {
		if tmp != "" {
			os.Remove(tmp)
		}
	}()
	defer pf.Close()
	pw := newPackWriter(pf, count)
	pw.buf = slices.Grow(pw.buf, int(min(size+32, packFlushAt))) // a merge of small packs needs less than a flush
	if err := produce(pw); err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	if len(pw.entries) != count {
		return packInfo{}, fmt.Errorf("write pack: %d objects written, %d announced", len(pw.entries), count)
	}
	sum, idx, err := pw.finish()
	if err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	name := "pack-" + sum.String()
	if err := pf.Sync(); err != nil {
		return packInfo{}, fmt.Errorf("sync pack %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name+".pack")); err != nil {
		return packInfo{}, fmt.Errorf("install pack: %w", err)
	}
	tmp = ""
	if err := installFile(dir, name+".idx", idx); err != nil {
		return packInfo{}, fmt.Errorf("install pack index: %w", err)
	}
	return packInfo{name: name, objects: count}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// listPacks returns the valid packs of the repository. With clean set (a
// writable store opening) it also repairs what an interrupted write left:
// temporary files are removed, a pack whose index is missing or damaged
// gets it rebuilt, an index without its pack is removed, and a pack that
// does not match its checksum is removed (the ref never pointed into it: it
// moves only after the pack's sync).
func listPacks(repo string, clean bool) ([]packInfo, error) {
	dir := packDir(repo)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list packs: %w", err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	var packs []packInfo
	removed := false
	for _, e := range ents {
		n := e.Name()
		if clean && strings.HasPrefix(n, "tmp_") {
			removed = os.Remove(filepath.Join(dir, n)) == nil || removed
		}
		if base, ok := strings.CutSuffix(n, ".idx"); ok && clean && !names[base+".pack"] {
			removed = os.Remove(filepath.Join(dir, n)) == nil || removed // its pack was merged away
		}
		base, ok := strings.CutSuffix(n, ".pack")
		if !ok {
			continue
		}
		count, err := checkPack(dir, base)
		if err != nil && clean {
			if count, err = rebuildIdx(dir, base); err != nil {
				os.Remove(filepath.Join(dir, base+".idx"))
				os.Remove(filepath.Join(dir, n))
				removed = true
			}
		}
		if err == nil {
			packs = append(packs, packInfo{name: base, objects: count})
		}
	}
	if removed {
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].name < packs[j].name })
	return packs, nil
}

// checkPack checks a pack's index (layout and checksum) and that the pack's
// trailer is the checksum the index records, and returns the object count.
func checkPack(dir, base string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, base+".idx"))
	if err != nil {
		return 0, err
	}
	idx, err := checkIdx(raw)
	if err != nil {
		return 0, fmt.Errorf("%s.idx: %w", base, err)
	}
	pf, err := os.Open(filepath.Join(dir, base+".pack"))
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	st, err := pf.Stat()
	if err != nil {
		return 0, err
	}
	trailer := make([]byte, 20)
	if st.Size() < 32 {
		return 0, fmt.Errorf("%s.pack: truncated", base)
	}
	if _, err := pf.ReadAt(trailer, st.Size()-20); err != nil {
		return 0, err
	}
	if !bytes.Equal(trailer, idx.packSum()) {
		return 0, fmt.Errorf("%s.pack does not match its index", base)
	}
	return idx.count(), nil
}

// geometricRollup picks the packs to merge so the rest form a geometric
// progression (each pack at least twice the objects of all smaller ones
// together), as `git repack --geometric=2` does. It returns nil when fewer
// than two packs would merge.
func geometricRollup(packs []packInfo) []packInfo {
	var sorted []packInfo
	for _, p := range packs {
		if !p.pinned {
			sorted = append(sorted, p)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].objects < sorted[j].objects })
	split := 0
	sum := 0
	for i, p := range sorted {
		if i > 0 && p.objects < 2*sum {
			split = i + 1
		}
		sum += p.objects
	}
	if split < 2 {
		return nil
	}
	return sorted[:split]
}

// errDeltaPack reports a pack holding deltas (written by git, not by the
// store): its entries cannot be copied alone, so it is left out of merges.
var errDeltaPack = errors.New("pack holds deltas")

// mergePacks copies the entries of packs, already compressed and
// undeltified, into one new pack, syncs it, its index and the folder, then
// removes the old packs.
func mergePacks(repo string, packs []packInfo) (packInfo, error) {
	dir := packDir(repo)
	var mapped []*mappedPack
	defer func() { closePacks(mapped) }()
	var all [][]packEntry
	seen := map[plumbing.Hash]bool{}
	count, size := 0, int64(0)
	for _, p := range packs {
		mp, err := mapPack(filepath.Join(dir, p.name))
		if err != nil {
			return packInfo{}, fmt.Errorf("merge packs: %w", err)
		}
		mapped = append(mapped, mp)
		entries, err := mp.entries()
		if err != nil {
			return packInfo{}, fmt.Errorf("merge packs: %s: %w", p.name, err)
		}
		kept := entries[:0]
		for _, e := range entries {
			if !seen[e.hash] {
				seen[e.hash] = true
				kept = append(kept, e)
				size += e.size
			}
		}
		count += len(kept)
		all = append(all, kept)
	}
	merged, err := writePack(repo, count, size, func(pw *packWriter) error {
		for i, entries := range all {
			for _, e := range entries {
				if err := pw.addRaw(e.hash, mapped[i].data[e.off:e.off+e.size], e.crc); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return packInfo{}, err
	}
	for _, p := range packs {
		if p.name == merged.name {
			continue
		}
		// The index goes first: a pack without an index is invisible.
		os.Remove(filepath.Join(dir, p.name+".idx"))
		os.Remove(filepath.Join(dir, p.name+".pack"))
	}
	return merged, syncDir(dir)
}

// packEntry locates one undeltified object in a mapped pack.
type packEntry struct {
	hash      plumbing.Hash
	crc       uint32
	off, size int64
}

// entries lists the pack's objects in pack order, with their extent. It
// fails with errDeltaPack when the pack holds deltas.
func (mp *mappedPack) entries() ([]packEntry, error) {
	n := mp.idx.count()
	entries := make([]packEntry, n)
	for i := range n {
		off, ok := mp.idx.offset(i)
		if !ok {
			return nil, errors.New("bad 64-bit offset")
		}
		entries[i] = packEntry{hash: plumbing.Hash(mp.idx.name(i)), crc: mp.idx.crc(i), off: off}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].off < entries[j].off })
	end := int64(len(mp.data)) - 20
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if e.off < 12 || e.off >= end {
			return nil, fmt.Errorf("offset %d outside the pack", e.off)
		}
		e.size = end - e.off
		end = e.off
		if t := plumbing.ObjectType((mp.data[e.off] >> 4) & 7); t < plumbing.CommitObject || t > plumbing.TagObject {
			return nil, errDeltaPack
		}
	}
	return entries, nil
}
