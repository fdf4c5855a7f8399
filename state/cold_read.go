package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"os"

	"github.com/alchemic-studio/alfred/state/internal/table"
	"github.com/go-git/go-git/v5/plumbing"
)

// coldFile is an open cold file: its tables read from disk on demand,
// memory keeping their block indexes only.
type coldFile struct {
	file      *os.File // nil when read from memory (tests)
	f         *table.File
	tip, root plumbing.Hash
	id        coldID
	strs      []string // the strings table: what the records' values refer to
}

// openColdFile opens the cold file at path; with whole set it reads it
// through and checks its checksum first (a file just written and synced
// by this process need not be).
func openColdFile(path string, whole bool) (*coldFile, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := file.Stat()
	if err == nil {
		var c *coldFile
		if c, err = newColdFile(file, st.Size(), whole); err == nil {
			c.file = file
			return c, nil
		}
	}
	file.Close()
	return nil, fmt.Errorf("open cold file %s: %w", path, err)
}

// newColdFile reads the cold file of size bytes in r: its directory and
// block indexes, and, with whole set, every byte against its checksum.
// A block's own checks are made at each read of it.
func newColdFile(r interface {
	ReadAt([]byte, int64) (int, error)
}, size int64, whole bool) (*coldFile, error) {
	f, err := table.Open(r, size)
	if err == nil && whole {
		err = f.Checksum()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCold, err)
	}
	c := &coldFile{f: f, id: coldID{size: size}}
	var sum [4]byte
	if _, err := r.ReadAt(sum[:], size-4); err != nil {
		return nil, fmt.Errorf("%w: %w", errCold, err)
	}
	c.id.sum = binary.LittleEndian.Uint32(sum[:])
	meta := f.Table(coldMeta)
	if meta == nil {
		return nil, fmt.Errorf("%w: no meta table", errCold)
	}
	v, ok, err := meta.Get([]byte(coldCommitKey))
	if err != nil || !ok || len(v) != 40 {
		return nil, fmt.Errorf("%w: no commit in its meta table (%v)", errCold, err)
	}
	copy(c.tip[:], v[:20])
	copy(c.root[:], v[20:])
	if c.strs, err = readColdStrings(f); err != nil {
		return nil, err
	}
	for _, name := range []string{coldRecords, coldRuns, coldRoutes, coldMailboxes, coldRunsByTime, coldDays, coldStrings} {
		if f.Table(name) == nil {
			return nil, fmt.Errorf("%w: no table %s", errCold, name)
		}
	}
	return c, nil
}

// readColdStrings reads the strings table, numbered from 0 in order.
func readColdStrings(f *table.File) ([]string, error) {
	t := f.Table(coldStrings)
	if t == nil {
		return nil, fmt.Errorf("%w: no table %s", errCold, coldStrings)
	}
	strs := make([]string, 0, t.Len())
	for e, err := range t.Ascend(nil) {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errCold, err)
		}
		if len(e.Key) != 4 || binary.BigEndian.Uint32(e.Key) != uint32(len(strs)) {
			return nil, fmt.Errorf("%w: string %d numbered %x", errCold, len(strs), e.Key)
		}
		strs = append(strs, string(e.Value))
	}
	return strs, nil
}

// Close closes the file.
func (c *coldFile) Close() error {
	if c.file == nil {
		return nil
	}
	return c.file.Close()
}

// record returns the entry of the record at path.
func (c *coldFile) record(path string) (ckEntry, bool, error) {
	v, ok, err := c.f.Table(coldRecords).Get([]byte(path))
	if err != nil || !ok {
		return ckEntry{}, false, err
	}
	e, err := parseColdValue(path, v, c.strs)
	return e, err == nil, err
}

// group returns the entries of the records under folder dir, in path
// order.
func (c *coldFile) group(dir string) ([]ckEntry, error) {
	var out []ckEntry
	for e, err := range c.f.Table(coldRecords).Prefix([]byte(dir + "/")) {
		if err != nil {
			return nil, err
		}
		ce, err := parseColdValue(string(e.Key), e.Value, c.strs)
		if err != nil {
			return nil, err
		}
		out = append(out, ce)
	}
	return out, nil
}

// paths yields the record paths under prefix, in path order.
func (c *coldFile) paths(prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for e, err := range c.f.Table(coldRecords).Prefix([]byte(prefix)) {
			if !yield(string(e.Key), err) || err != nil {
				return
			}
		}
	}
}

// run returns the path of the cold run whose record name is name.
func (c *coldFile) run(name string) (string, error) {
	v, _, err := c.f.Table(coldRuns).Get([]byte(name))
	return string(v), err
}

// claims yields the paths of the cold mailboxes claiming rt, in order.
func (c *coldFile) claims(rt Route) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for e, err := range c.f.Table(coldRoutes).Prefix(routeKey(rt)) {
			var p string
			if err == nil {
				_, p, err = splitClaim(e.Key)
			}
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

// coldListEntry is an entry of an overview list of the cold file.
type coldListEntry struct {
	k ovKey
	coldListValue
}

// list yields the entries of an overview list (coldMailboxes or
// coldRunsByTime, of one project when project is set) older than after
// (nil: from the newest), newest first.
func (c *coldFile) list(name, project string, after *ovKey) iter.Seq2[coldListEntry, error] {
	if project != "" {
		name += "/" + project
	}
	return func(yield func(coldListEntry, error) bool) {
		t := c.f.Table(name)
		if t == nil {
			return
		}
		var from []byte
		if after != nil {
			from = listKey(*after)
		}
		parse := parseMailboxListValue
		if name == coldRunsByTime || bytes.HasPrefix([]byte(name), []byte(coldRunsByTime+"/")) {
			parse = parseRunListValue
		}
		for e, err := range t.Ascend(from) {
			if err != nil {
				yield(coldListEntry{}, err)
				return
			}
			if from != nil && bytes.Equal(e.Key, from) {
				continue
			}
			v, err := parse(e.Value)
			var k ovKey
			if err == nil {
				k, err = parseListKey(e.Key)
			}
			if !yield(coldListEntry{k, v}, err) || err != nil {
				return
			}
		}
	}
}

// parseListKey reads back a listKey.
func parseListKey(b []byte) (ovKey, error) {
	if len(b) < 10 {
		return ovKey{}, fmt.Errorf("%w: list key of %d bytes", errCold, len(b))
	}
	u := ^uint64(0)
	for _, x := range b[:8] {
		u = u<<8 | uint64(x)
	}
	t := int64(^u ^ 1<<63)
	id := make([]byte, 0, len(b)-10)
	rest := b[8:]
	for len(rest) > 0 {
		switch {
		case len(rest) >= 2 && rest[0] == 0xFF && rest[1] == 0xFF:
			if len(rest) != 2 {
				return ovKey{}, fmt.Errorf("%w: list key runs on", errCold)
			}
			return ovKey{t, string(id)}, nil
		case len(rest) >= 2 && rest[0] == 0xFF && rest[1] == 0x00:
			id, rest = append(id, 0), rest[2:]
		default:
			id, rest = append(id, ^rest[0]), rest[1:]
		}
	}
	return ovKey{}, fmt.Errorf("%w: list key unterminated", errCold)
}

// days yields the days table's aggregates.
func (c *coldFile) days() iter.Seq2[coldDay, error] {
	return func(yield func(coldDay, error) bool) {
		for e, err := range c.f.Table(coldDays).Ascend(nil) {
			if err != nil {
				yield(coldDay{}, err)
				return
			}
			d, err := parseDayKey(e.Key)
			if err == nil {
				d.v, err = parseDayValue(e.Value)
			}
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}

// coldDay is one aggregate of the days table.
type coldDay struct {
	project string
	day     int64
	class   runClass
	v       dayValue
}

func parseDayKey(b []byte) (coldDay, error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 || len(b) < i+9 {
		return coldDay{}, fmt.Errorf("%w: day key", errCold)
	}
	d := coldDay{project: string(b[:i])}
	var u uint64
	for _, x := range b[i+1 : i+9] {
		u = u<<8 | uint64(x)
	}
	d.day = int64(u ^ 1<<63)
	parts := bytes.SplitN(b[i+9:], []byte{0}, 3)
	if len(parts) != 3 {
		return coldDay{}, fmt.Errorf("%w: day key class", errCold)
	}
	d.class = runClass{RunStatus(parts[0]), string(parts[1]), string(parts[2])}
	return d, nil
}
