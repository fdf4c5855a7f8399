package state

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// packInfo describes one pack in objects/pack.
type packInfo struct {
	name    string // "pack-<hash>"
	objects int
	pinned  bool // holds deltas: never merged
}

// packWriter streams non-delta objects into a git pack (version 2) and
// collects what the .idx needs.
type packWriter struct {
	w      *bufio.Writer
	sum    hash.Hash
	offset int64
	zbuf   []byte
	idx    idxfile.Writer
	seen   map[plumbing.Hash]bool
}

func newPackWriter(w io.Writer, count int) (*packWriter, error) {
	pw := &packWriter{sum: sha1.New(), seen: make(map[plumbing.Hash]bool, count)}
	pw.w = bufio.NewWriterSize(io.MultiWriter(w, pw.sum), 64<<10)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(count))
	if err := pw.idx.OnHeader(uint32(count)); err != nil {
		return nil, err
	}
	_, err := pw.w.Write(hdr[:])
	pw.offset = 12
	return pw, err
}

func (pw *packWriter) add(typ plumbing.ObjectType, h plumbing.Hash, data []byte) error {
	pw.seen[h] = true
	var hdr [16]byte
	size := len(data)
	n := 0
	b := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		hdr[n] = b | 0x80
		n++
		b = byte(size & 0x7f)
		size >>= 7
	}
	hdr[n] = b
	n++
	pw.zbuf = appendStoredZlib(pw.zbuf[:0], data)
	crc := crc32.Update(crc32.ChecksumIEEE(hdr[:n]), crc32.IEEETable, pw.zbuf)
	pw.idx.Add(h, uint64(pw.offset), crc)
	if _, err := pw.w.Write(hdr[:n]); err != nil {
		return err
	}
	if _, err := pw.w.Write(pw.zbuf); err != nil {
		return err
	}
	pw.offset += int64(n + len(pw.zbuf))
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
	pw.seen[h] = true
	pw.idx.Add(h, uint64(pw.offset), crc)
	if _, err := pw.w.Write(entry); err != nil {
		return err
	}
	pw.offset += int64(len(entry))
	return nil
}

// finish writes the trailer and returns the pack checksum and its index.
func (pw *packWriter) finish() (plumbing.Hash, *idxfile.MemoryIndex, error) {
	var sum plumbing.Hash
	if err := pw.w.Flush(); err != nil {
		return sum, nil, err
	}
	pw.sum.Sum(sum[:0])
	if _, err := pw.w.Write(sum[:]); err != nil {
		return sum, nil, err
	}
	if err := pw.w.Flush(); err != nil {
		return sum, nil, err
	}
	if err := pw.idx.OnFooter(sum); err != nil {
		return sum, nil, err
	}
	idx, err := pw.idx.Index()
	return sum, idx, err
}

// packDir is objects/pack of the repository.
func packDir(repo string) string { return filepath.Join(repo, "objects", "pack") }

// writePack writes objs as one pack and its index into objects/pack and
// syncs both files and the folder before returning. produce is called with
// a packWriter expecting count objects.
func writePack(repo string, count int, produce func(*packWriter) error) (packInfo, error) {
	dir := packDir(repo)
	pf, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return packInfo{}, fmt.Errorf("create pack: %w", err)
	}
	removeTmp := []string{pf.Name()}
	defer func() {
		for _, n := range removeTmp {
			os.Remove(n)
		}
	}()
	defer pf.Close()
	pw, err := newPackWriter(pf, count)
	if err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	if err := produce(pw); err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	if len(pw.seen) != count {
		return packInfo{}, fmt.Errorf("write pack: %d objects written, %d announced", len(pw.seen), count)
	}
	sum, idx, err := pw.finish()
	if err != nil {
		return packInfo{}, fmt.Errorf("write pack: %w", err)
	}
	xf, err := os.CreateTemp(dir, "tmp_idx_")
	if err != nil {
		return packInfo{}, fmt.Errorf("create pack index: %w", err)
	}
	removeTmp = append(removeTmp, xf.Name())
	defer xf.Close()
	bw := bufio.NewWriter(xf)
	if _, err := idxfile.NewEncoder(bw).Encode(idx); err != nil {
		return packInfo{}, fmt.Errorf("write pack index: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return packInfo{}, fmt.Errorf("write pack index: %w", err)
	}
	name := "pack-" + sum.String()
	// Rename first, then sync both files and the folder together: the
	// renames and the data reach the disk in one journal commit where the
	// file system allows it. The ref moves only after all three syncs, so
	// an object the ref needs is never missing.
	if err := os.Rename(pf.Name(), filepath.Join(dir, name+".pack")); err != nil {
		return packInfo{}, fmt.Errorf("install pack: %w", err)
	}
	if err := os.Rename(xf.Name(), filepath.Join(dir, name+".idx")); err != nil {
		return packInfo{}, fmt.Errorf("install pack index: %w", err)
	}
	removeTmp = nil
	if err := syncAll(dir, pf, xf); err != nil {
		return packInfo{}, err
	}
	return packInfo{name: name, objects: count}, nil
}

// syncAll fsyncs the files and the folder concurrently so that one journal
// commit can cover them all.
func syncAll(dir string, files ...*os.File) error {
	var wg sync.WaitGroup
	errs := make([]error, len(files)+1)
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.Sync(); err != nil {
				errs[i] = fmt.Errorf("sync %s: %w", f.Name(), err)
			}
		}()
	}
	errs[len(files)] = syncDir(dir)
	wg.Wait()
	return errors.Join(errs...)
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

// listPacks returns the valid packs of the repository, removing leftovers of
// an interrupted write (temporary files, a pack without its index, an index
// whose pack is missing or does not match) when clean is set.
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
	remove := func(n string) {
		if clean {
			os.Remove(filepath.Join(dir, n))
			removed = true
		}
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, "tmp_"):
			remove(n)
		case strings.HasSuffix(n, ".pack"):
			if !names[strings.TrimSuffix(n, ".pack")+".idx"] {
				remove(n)
			}
		case strings.HasSuffix(n, ".idx"):
			base := strings.TrimSuffix(n, ".idx")
			count, ok := checkPack(dir, base)
			if !ok {
				remove(n)
				remove(base + ".pack")
				continue
			}
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

// checkPack reads the object count of an index and checks that the pack's
// trailer matches the checksum the index records.
func checkPack(dir, base string) (int, bool) {
	idx, err := os.ReadFile(filepath.Join(dir, base+".idx"))
	if err != nil || len(idx) < 8+256*4+40 || !bytes.Equal(idx[:4], []byte{0xff, 't', 'O', 'c'}) {
		return 0, false
	}
	count := int(binary.BigEndian.Uint32(idx[8+255*4:]))
	packSum := idx[len(idx)-40 : len(idx)-20]
	pf, err := os.Open(filepath.Join(dir, base+".pack"))
	if err != nil {
		return 0, false
	}
	defer pf.Close()
	st, err := pf.Stat()
	if err != nil || st.Size() < 32 {
		return 0, false
	}
	trailer := make([]byte, 20)
	if _, err := pf.ReadAt(trailer, st.Size()-20); err != nil || !bytes.Equal(trailer, packSum) {
		return 0, false
	}
	return count, true
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
// undeltified, into one new pack, syncs it, then removes the old packs.
func mergePacks(repo string, packs []packInfo) (packInfo, error) {
	dir := packDir(repo)
	type entry struct {
		hash      plumbing.Hash
		crc       uint32
		off, size int64
	}
	var mapped []*mappedPack
	defer func() { closePacks(mapped) }()
	var all [][]entry
	seen := map[plumbing.Hash]bool{}
	count := 0
	for _, p := range packs {
		mp, err := mapPack(filepath.Join(dir, p.name))
		if err != nil {
			return packInfo{}, fmt.Errorf("merge packs: %w", err)
		}
		mapped = append(mapped, mp)
		it, err := mp.idx.Entries()
		if err != nil {
			return packInfo{}, fmt.Errorf("merge packs: %w", err)
		}
		var entries []entry
		for {
			e, err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return packInfo{}, fmt.Errorf("merge packs: %w", err)
			}
			entries = append(entries, entry{hash: e.Hash, crc: e.CRC32, off: int64(e.Offset)})
		}
		it.Close()
		sort.Slice(entries, func(i, j int) bool { return entries[i].off < entries[j].off })
		end := int64(len(mp.data)) - 20
		kept := entries[:0]
		for i := len(entries) - 1; i >= 0; i-- {
			e := &entries[i]
			if e.off < 12 || e.off >= end {
				return packInfo{}, fmt.Errorf("merge packs: %s: offset %d outside the pack", p.name, e.off)
			}
			e.size = end - e.off
			end = e.off
			if t := plumbing.ObjectType((mp.data[e.off] >> 4) & 7); t < plumbing.CommitObject || t > plumbing.TagObject {
				return packInfo{}, fmt.Errorf("merge packs: %s: %w", p.name, errDeltaPack)
			}
		}
		for _, e := range entries {
			if !seen[e.hash] {
				seen[e.hash] = true
				kept = append(kept, e)
			}
		}
		count += len(kept)
		all = append(all, kept)
	}
	merged, err := writePack(repo, count, func(pw *packWriter) error {
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
