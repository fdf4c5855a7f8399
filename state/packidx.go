package state

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// A pack index (.idx, version 2) is what git and the store look objects up
// by. The store writes it next to its pack without syncing it: the pack is
// the durable part, and an index found missing or damaged when a writable
// store opens is rebuilt from its pack.

// idxEntry is one object of a pack as its index lists it.
type idxEntry struct {
	hash plumbing.Hash
	off  uint64
	crc  uint32
}

const (
	idxHeader  = 8          // magic and version
	idxFanout  = 256 * 4    // cumulative object counts by first hash byte
	idxPerObj  = 20 + 4 + 4 // name, crc32, 32-bit offset
	idxTrailer = 20 + 20    // pack checksum, index checksum
	idxNames   = idxHeader + idxFanout
	idxMinSize = idxNames + idxTrailer
)

var idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// encodeIdx returns the version 2 index of a pack holding entries (sorted
// here by hash), whose trailer is packSum.
func encodeIdx(entries []idxEntry, packSum plumbing.Hash) ([]byte, error) {
	slices.SortFunc(entries, func(a, b idxEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	large := 0
	for i, e := range entries {
		if i > 0 && e.hash == entries[i-1].hash {
			return nil, fmt.Errorf("pack index: object %s listed twice", e.hash)
		}
		if e.off >= 1<<31 {
			large++
		}
	}
	n := len(entries)
	buf := make([]byte, 0, idxMinSize+n*idxPerObj+large*8)
	buf = append(buf, idxMagic...)
	var fan [256]uint32
	for _, e := range entries {
		fan[e.hash[0]]++
	}
	sum := uint32(0)
	for _, c := range fan {
		sum += c
		buf = binary.BigEndian.AppendUint32(buf, sum)
	}
	for _, e := range entries {
		buf = append(buf, e.hash[:]...)
	}
	for _, e := range entries {
		buf = binary.BigEndian.AppendUint32(buf, e.crc)
	}
	large = 0
	for _, e := range entries {
		if e.off >= 1<<31 {
			buf = binary.BigEndian.AppendUint32(buf, 1<<31|uint32(large))
			large++
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.off))
	}
	for _, e := range entries {
		if e.off >= 1<<31 {
			buf = binary.BigEndian.AppendUint64(buf, e.off)
		}
	}
	buf = append(buf, packSum[:]...)
	idxSum := sha1.Sum(buf)
	return append(buf, idxSum[:]...), nil
}

// packIndex is a checked version 2 index, read in place.
type packIndex []byte

// checkIdx checks an index's layout and checksum.
func checkIdx(raw []byte) (packIndex, error) {
	if len(raw) < idxMinSize || !bytes.Equal(raw[:idxHeader], idxMagic) {
		return nil, errors.New("not a version 2 pack index")
	}
	x := packIndex(raw)
	prev := uint32(0)
	for i := range 256 {
		c := binary.BigEndian.Uint32(raw[idxHeader+4*i:])
		if c < prev {
			return nil, errors.New("pack index: fan-out table not sorted")
		}
		prev = c
	}
	n := x.count()
	rest := len(raw) - idxMinSize - n*idxPerObj
	if n > (len(raw)-idxMinSize)/idxPerObj || rest%8 != 0 {
		return nil, fmt.Errorf("pack index: %d bytes for %d objects", len(raw), n)
	}
	if sum := sha1.Sum(raw[:len(raw)-20]); !bytes.Equal(sum[:], raw[len(raw)-20:]) {
		return nil, errors.New("pack index: checksum mismatch")
	}
	return x, nil
}

func (x packIndex) count() int { return int(binary.BigEndian.Uint32(x[idxHeader+255*4:])) }

// packSum is the checksum of the pack the index describes.
func (x packIndex) packSum() []byte { return x[len(x)-idxTrailer : len(x)-20] }

func (x packIndex) name(i int) []byte { return x[idxNames+20*i : idxNames+20*i+20] }

func (x packIndex) crc(i int) uint32 {
	return binary.BigEndian.Uint32(x[idxNames+20*x.count()+4*i:])
}

// offset returns where object i starts in the pack.
func (x packIndex) offset(i int) (int64, bool) {
	n := x.count()
	off := binary.BigEndian.Uint32(x[idxNames+24*n+4*i:])
	if off&(1<<31) == 0 {
		return int64(off), true
	}
	pos := idxNames + 28*n + 8*int(off&^(1<<31))
	if pos+8 > len(x)-idxTrailer {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(x[pos:])), true
}

// find returns the offset of h in the pack. Object names are uniform, so
// it interpolates on their first 8 bytes for a few steps (a lookup in a
// large pack touches 3 or 4 names instead of 17), then bisects.
func (x packIndex) find(h plumbing.Hash) (int64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(binary.BigEndian.Uint32(x[idxHeader+4*(int(h[0])-1):]))
	}
	hi := int(binary.BigEndian.Uint32(x[idxHeader+4*int(h[0]):]))
	key := binary.BigEndian.Uint64(h[:8])
	for step := 0; lo < hi; step++ {
		m := int(uint(lo+hi) >> 1)
		if step < 4 && hi-lo > 8 {
			a, b := binary.BigEndian.Uint64(x.name(lo)), binary.BigEndian.Uint64(x.name(hi-1))
			if key < a || key > b {
				return 0, false
			}
			m = min(hi-1, lo+int(float64(key-a)/(float64(b-a)+1)*float64(hi-lo)))
		}
		nm := x.name(m)
		c := cmpUint64(binary.BigEndian.Uint64(nm), key)
		if c == 0 {
			c = bytes.Compare(nm[8:], h[8:])
		}
		switch {
		case c == 0:
			return x.offset(m)
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rebuildIdx writes the index of a pack whose own is missing or damaged,
// after checking the pack's checksum, and syncs it. It returns the object
// count; an error means the pack itself is damaged.
func rebuildIdx(dir, base string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, base+".pack"))
	if err != nil {
		return 0, fmt.Errorf("rebuild %s.idx: %w", base, err)
	}
	if len(raw) < 32 || !bytes.HasPrefix(raw, []byte("PACK")) {
		return 0, fmt.Errorf("rebuild %s.idx: not a pack", base)
	}
	if sum := sha1.Sum(raw[:len(raw)-20]); !bytes.Equal(sum[:], raw[len(raw)-20:]) || "pack-"+plumbing.Hash(sum).String() != base {
		return 0, fmt.Errorf("rebuild %s.idx: pack checksum mismatch", base)
	}
	w := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(bytes.NewReader(raw)), w)
	if err != nil {
		return 0, fmt.Errorf("rebuild %s.idx: %w", base, err)
	}
	if _, err := p.Parse(); err != nil {
		return 0, fmt.Errorf("rebuild %s.idx: %w", base, err)
	}
	idx, err := w.Index()
	if err != nil {
		return 0, fmt.Errorf("rebuild %s.idx: %w", base, err)
	}
	var b bytes.Buffer
	if _, err := idxfile.NewEncoder(&b).Encode(idx); err != nil {
		return 0, fmt.Errorf("rebuild %s.idx: %w", base, err)
	}
	if err := installFile(dir, base+".idx", b.Bytes()); err != nil {
		return 0, fmt.Errorf("rebuild %s.idx: %w", base, err)
	}
	return int(idx.Fanout[255]), nil
}

// installFile writes data to dir/name through a temporary file, durably.
func installFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "tmp_")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}
