package state

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/sys/unix"
)

// objectReader reads whole objects at Open. Undeltified objects in packs
// (all the store writes) are inflated straight from the memory-mapped pack
// via go-git's pack index; anything else (deltas from a `git gc`, loose
// objects the git CLI wrote) goes through go-git's object storage.
type objectReader struct {
	packs []*mappedPack
	stor  *filesystem.Storage
	zr    io.ReadCloser
	br    bytes.Reader
}

type mappedPack struct {
	data []byte
	idx  *idxfile.MemoryIndex
}

func openPacks(repo string) ([]*mappedPack, error) {
	packs, err := listPacks(repo, false)
	if err != nil {
		return nil, err
	}
	var out []*mappedPack
	for _, p := range packs {
		mp, err := mapPack(filepath.Join(packDir(repo), p.name))
		if err != nil {
			closePacks(out)
			return nil, err
		}
		out = append(out, mp)
	}
	return out, nil
}

func mapPack(base string) (*mappedPack, error) {
	raw, err := os.ReadFile(base + ".idx")
	if err != nil {
		return nil, fmt.Errorf("open pack index: %w", err)
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(raw)).Decode(idx); err != nil {
		return nil, fmt.Errorf("decode %s.idx: %w", base, err)
	}
	pf, err := os.Open(base + ".pack")
	if err != nil {
		return nil, fmt.Errorf("open pack: %w", err)
	}
	defer pf.Close()
	st, err := pf.Stat()
	if err != nil {
		return nil, fmt.Errorf("open pack: %w", err)
	}
	data, err := unix.Mmap(int(pf.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s.pack: %w", base, err)
	}
	return &mappedPack{data: data, idx: idx}, nil
}

func closePacks(packs []*mappedPack) {
	for _, p := range packs {
		unix.Munmap(p.data)
	}
}

var errNotInPack = errors.New("not an undeltified object in a pack")

// read returns the content of object h, which must be of type typ.
func (r *objectReader) read(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	data, err := r.readPacked(h, typ)
	if err == nil || !errors.Is(err, errNotInPack) {
		return data, err
	}
	obj, err := r.stor.EncodedObject(typ, h)
	if err != nil {
		return nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func (r *objectReader) readPacked(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	for _, p := range r.packs {
		off, ok := findOffset(p.idx, h)
		if !ok {
			continue
		}
		if off < 12 || off >= int64(len(p.data)) {
			return nil, fmt.Errorf("object %s: offset %d outside its pack", h, off)
		}
		b := p.data[off:]
		t := plumbing.ObjectType((b[0] >> 4) & 7)
		size := int64(b[0] & 0x0f)
		shift := uint(4)
		n := 1
		for b[n-1]&0x80 != 0 {
			if n >= len(b) || shift > 56 {
				return nil, fmt.Errorf("object %s: bad pack entry header", h)
			}
			size |= int64(b[n]&0x7f) << shift
			shift += 7
			n++
		}
		if t != typ {
			if t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
				return nil, errNotInPack
			}
			return nil, fmt.Errorf("object %s is a %s, want a %s", h, t, typ)
		}
		r.br.Reset(b[n:])
		if r.zr == nil {
			var err error
			if r.zr, err = zlib.NewReader(&r.br); err != nil {
				return nil, fmt.Errorf("object %s: %w", h, err)
			}
		} else if err := r.zr.(zlib.Resetter).Reset(&r.br, nil); err != nil {
			return nil, fmt.Errorf("object %s: %w", h, err)
		}
		out := make([]byte, size)
		if _, err := io.ReadFull(r.zr, out); err != nil {
			return nil, fmt.Errorf("object %s: inflate: %w", h, err)
		}
		return out, nil
	}
	return nil, errNotInPack
}

// packed reports whether h is an undeltified object in a pack.
func (r *objectReader) packed(h plumbing.Hash) bool {
	for _, p := range r.packs {
		if off, ok := findOffset(p.idx, h); ok && off >= 12 && off < int64(len(p.data)) {
			t := plumbing.ObjectType((p.data[off] >> 4) & 7)
			return t >= plumbing.CommitObject && t <= plumbing.TagObject
		}
	}
	return false
}

// findOffset looks h up in a decoded version 2 index. It reads the index's
// tables directly: MemoryIndex.FindOffset also records every answer in a
// reverse map under a mutex, which costs more than the search at Open.
func findOffset(idx *idxfile.MemoryIndex, h plumbing.Hash) (int64, bool) {
	k := idx.FanoutMapping[h[0]]
	if k < 0 || k >= len(idx.Names) {
		return 0, false
	}
	names := idx.Names[k]
	n := len(names) / 20
	i := sort.Search(n, func(i int) bool { return bytes.Compare(names[i*20:i*20+20], h[:]) >= 0 })
	if i >= n || !bytes.Equal(names[i*20:i*20+20], h[:]) {
		return 0, false
	}
	off := binary.BigEndian.Uint32(idx.Offset32[k][i*4:])
	if off&0x80000000 == 0 {
		return int64(off), true
	}
	pos := int(off&0x7fffffff) * 8
	if pos+8 > len(idx.Offset64) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(idx.Offset64[pos:])), true
}

// parseTree decodes a raw git tree.
func parseTree(data []byte) ([]treeEntry, error) {
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, errors.New("malformed tree entry mode")
		}
		mode := string(data[:sp])
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+21 {
			return nil, errors.New("malformed tree entry")
		}
		var e treeEntry
		e.name = string(data[:nul])
		e.dir = mode == "40000"
		copy(e.hash[:], data[nul+1:nul+21])
		data = data[nul+21:]
		out = append(out, e)
	}
	return out, nil
}

// commitTree returns the tree of a raw commit.
func commitTree(data []byte) (plumbing.Hash, error) {
	if len(data) < 45 || !bytes.HasPrefix(data, []byte("tree ")) {
		return plumbing.ZeroHash, errors.New("malformed commit")
	}
	return plumbing.NewHash(string(data[5:45])), nil
}
