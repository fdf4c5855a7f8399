package state

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/sys/unix"
)

// objectReader reads whole objects at Open. Undeltified objects in packs
// (all the store writes) are inflated straight from the memory-mapped pack
// via their indexes; anything else (deltas from a `git gc`, loose
// objects the git CLI wrote) goes through go-git's object storage.
type objectReader struct {
	packs []*mappedPack
	stor  *filesystem.Storage
	zr    io.ReadCloser
	br    bytes.Reader
}

// mappedPack is a pack and its index in memory: mapped when large, read
// when small (a commit's pack is a few KiB: reading it costs less than
// mapping and unmapping it).
type mappedPack struct {
	data []byte    // the .pack
	idx  packIndex // the .idx
	maps [][]byte  // what to unmap
}

const mapFrom = 1 << 20

func openPacks(repo string, packs []packInfo) ([]*mappedPack, error) {
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

// mapPack loads a pack and its index; listPacks checked them.
func mapPack(base string) (*mappedPack, error) {
	mp := &mappedPack{}
	idx, err := mp.load(base + ".idx")
	if err != nil {
		return nil, fmt.Errorf("open pack index: %w", err)
	}
	if len(idx) < idxMinSize || !bytes.Equal(idx[:idxHeader], idxMagic) ||
		len(idx) < idxMinSize+packIndex(idx).count()*idxPerObj {
		closePacks([]*mappedPack{mp})
		return nil, fmt.Errorf("open pack index %s.idx: not a version 2 index", base)
	}
	mp.idx = packIndex(idx)
	if mp.data, err = mp.load(base + ".pack"); err != nil {
		closePacks([]*mappedPack{mp})
		return nil, fmt.Errorf("open pack: %w", err)
	}
	return mp, nil
}

// load reads or maps a file.
func (mp *mappedPack) load(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < mapFrom {
		data := make([]byte, st.Size())
		_, err := io.ReadFull(f, data)
		return data, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	mp.maps = append(mp.maps, data)
	return data, nil
}

func closePacks(packs []*mappedPack) {
	for _, p := range packs {
		for _, m := range p.maps {
			unix.Munmap(m)
		}
		p.maps = nil
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

// readPacked returns a copy of object h from the packs.
func (r *objectReader) readPacked(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	z, size, err := r.locate(h, typ)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if storedCopy(out, z) {
		return out, nil
	}
	return out, r.inflate(h, out, z)
}

// view returns object h from the packs, in place when it is stored as one
// uncompressed block (as the store writes objects up to 64 KiB), else a copy.
// An in-place view is valid while the packs are mapped.
func (r *objectReader) view(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, error) {
	z, size, err := r.locate(h, typ)
	if err != nil {
		return nil, err
	}
	if zlibHeader(z) && len(z) >= 11+size && z[2]&0x07 == 1 && int(z[3])|int(z[4])<<8 == size && z[5] == ^z[3] && z[6] == ^z[4] {
		data := z[7 : 7+size : 7+size]
		if binary.BigEndian.Uint32(z[7+size:]) == adler32.Checksum(data) {
			return data, nil
		}
	}
	out := make([]byte, size)
	if storedCopy(out, z) {
		return out, nil
	}
	return out, r.inflate(h, out, z)
}

func zlibHeader(z []byte) bool {
	return len(z) >= 2 && z[0] == 0x78 && z[1]&0x20 == 0 && (uint(z[0])<<8|uint(z[1]))%31 == 0
}

// locate finds undeltified object h of type typ: its zlib stream (to the
// end of the pack) and its size.
func (r *objectReader) locate(h plumbing.Hash, typ plumbing.ObjectType) ([]byte, int, error) {
	for _, p := range r.packs {
		off, ok := p.idx.find(h)
		if !ok {
			continue
		}
		if off < 12 || off >= int64(len(p.data))-20 {
			return nil, 0, fmt.Errorf("object %s: offset %d outside its pack", h, off)
		}
		b := p.data[off : len(p.data)-20]
		t := plumbing.ObjectType((b[0] >> 4) & 7)
		size := int64(b[0] & 0x0f)
		shift := uint(4)
		n := 1
		for b[n-1]&0x80 != 0 {
			if n >= len(b) || shift > 56 {
				return nil, 0, fmt.Errorf("object %s: bad pack entry header", h)
			}
			size |= int64(b[n]&0x7f) << shift
			shift += 7
			n++
		}
		if t != typ {
			if t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
				return nil, 0, errNotInPack
			}
			return nil, 0, fmt.Errorf("object %s is a %s, want a %s", h, t, typ)
		}
		if size > int64(len(b)) && size > 1<<30 {
			return nil, 0, fmt.Errorf("object %s: implausible size %d", h, size)
		}
		return b[n:], int(size), nil
	}
	return nil, 0, errNotInPack
}

// storedCopy copies a zlib stream made of stored deflate blocks (as
// appendStoredZlib writes) into out, which has the exact inflated size,
// and checks its Adler-32. It reports false, leaving the work to zlib,
// for any other stream.
func storedCopy(out, z []byte) bool {
	if !zlibHeader(z) {
		return false
	}
	z = z[2:]
	at := 0
	for final := false; !final; {
		if len(z) < 5 || z[0]&0x06 != 0 {
			return false
		}
		n := int(z[1]) | int(z[2])<<8
		if z[3] != ^z[1] || z[4] != ^z[2] || len(z) < 5+n || at+n > len(out) {
			return false
		}
		copy(out[at:], z[5:5+n])
		at += n
		final = z[0]&1 == 1
		z = z[5+n:]
	}
	return at == len(out) && len(z) >= 4 && binary.BigEndian.Uint32(z) == adler32.Checksum(out)
}

// inflate decompresses a general zlib stream into out.
func (r *objectReader) inflate(h plumbing.Hash, out, z []byte) error {
	r.br.Reset(z)
	if r.zr == nil {
		var err error
		if r.zr, err = zlib.NewReader(&r.br); err != nil {
			return fmt.Errorf("object %s: %w", h, err)
		}
	} else if err := r.zr.(zlib.Resetter).Reset(&r.br, nil); err != nil {
		return fmt.Errorf("object %s: %w", h, err)
	}
	if _, err := io.ReadFull(r.zr, out); err != nil {
		return fmt.Errorf("object %s: inflate: %w", h, err)
	}
	return nil
}

// parseTree decodes a raw git tree. Folder names and "mailbox.json" repeat
// across trees: they are shared through in (which may be nil).
func parseTree(data []byte, in *interner) ([]treeEntry, error) {
	out := make([]treeEntry, 0, bytes.Count(data, []byte{0}))
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, errors.New("malformed tree entry mode")
		}
		dir := string(data[:sp]) == "40000"
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+21 {
			return nil, errors.New("malformed tree entry")
		}
		e := treeEntry{dir: dir}
		if name := data[:nul]; dir || string(name) == "mailbox.json" {
			e.name = in.get(name)
		} else {
			e.name = string(name)
		}
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
