package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

func refPath(repo string) string { return filepath.Join(repo, filepath.FromSlash(string(RefName))) }

// errMalformedRef is wrapped by readRef for a ref file that does not hold a
// commit hash, as a crash can leave it (see repairRef).
var errMalformedRef = errors.New("malformed ref")

// readRef reads the branch from disk (loose ref first, then packed-refs);
// zero when it does not exist.
func readRef(repo string) (plumbing.Hash, error) {
	b, err := readSmall(refPath(repo))
	if err == nil {
		h := strings.TrimSpace(string(b))
		if len(h) != 40 || !plumbing.IsHash(h) {
			return plumbing.ZeroHash, fmt.Errorf("read %s: %w %q", RefName, errMalformedRef, h)
		}
		return plumbing.NewHash(h), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", RefName, err)
	}
	stor := openStorage(repo)
	defer stor.Close()
	return readTip(stor)
}

// moveRef moves the branch to h durably, as git does: it creates
// {ref}.lock exclusively (so a git CLI updating the branch at the same
// time fails, or makes this fail), checks that the branch still points at
// old (compare-and-swap; lost when not), writes h into the lock file,
// renames it over the ref and syncs the ref's folder: the second and last
// sync of a commit. The lock file's
// data is not synced: ext4 writes the data of a file renamed over another
// before the rename commits, and a ref found empty or malformed is
// recovered by repairRef. force skips the check.
func moveRef(repo string, old, h plumbing.Hash, force bool) (lost bool, err error) {
	path := refPath(repo)
	lock := path + ".lock"
	content := []byte(h.String() + "\n")
	fd, err := createFile(lock, content, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			fd, err = createFile(lock, content, 0o644)
		}
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", RefName, err)
	}
	unix.Close(fd)
	if !force {
		cur, err := readRef(repo)
		if err != nil || cur != old {
			unix.Unlink(lock)
			return err == nil, err
		}
	}
	if err := unix.Rename(lock, path); err != nil {
		unix.Unlink(lock)
		return false, fmt.Errorf("write %s: %w", RefName, err)
	}
	return false, syncDirFD(filepath.Dir(path))
}

// repairRef prepares the branch for a writable store: it removes a lock
// file a killed writer left, and recovers a ref file that a crash left
// without its content (its rename reached the disk, its data did not: the
// file system did not flush a file renamed over another, as ext4 does) by
// pointing the branch at the newest commit in the packs, whose pack was
// synced before the ref moved.
func repairRef(repo string, packs []packInfo, warn func(msg string, args ...any)) error {
	if err := os.Remove(refPath(repo) + ".lock"); err == nil {
		warn("removed a stale state ref lock", "lock", refPath(repo)+".lock")
	}
	_, err := readRef(repo)
	if !errors.Is(err, errMalformedRef) {
		return err
	}
	tip, err := newestPackedCommit(repo, packs)
	if err != nil || tip.IsZero() {
		return fmt.Errorf("recover %s: no commit found in the packs (%w)", RefName, err)
	}
	warn("state branch ref was damaged; recovered it from the packs", "commit", tip)
	_, err = moveRef(repo, plumbing.ZeroHash, tip, true)
	return err
}

// newestPackedCommit returns the commit of the packs with the longest
// first-parent chain: the store's history is linear, so that is the last
// one written.
func newestPackedCommit(repo string, packs []packInfo) (plumbing.Hash, error) {
	mapped, err := openPacks(repo, packs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer closePacks(mapped)
	rd := &objectReader{packs: mapped}
	parent := map[plumbing.Hash]plumbing.Hash{}
	for _, mp := range mapped {
		for i := range mp.idx.count() {
			off, ok := mp.idx.offset(i)
			if !ok || off < 12 || off >= int64(len(mp.data)) || plumbing.ObjectType((mp.data[off]>>4)&7) != plumbing.CommitObject {
				continue
			}
			h := plumbing.Hash(mp.idx.name(i))
			if raw, err := rd.readPacked(h, plumbing.CommitObject); err == nil {
				parent[h] = commitParent(raw)
			}
		}
	}
	depth := map[plumbing.Hash]int{}
	var best plumbing.Hash
	for h := range parent {
		var chain []plumbing.Hash
		for c := h; !c.IsZero() && depth[c] == 0; c = parent[c] {
			if _, known := parent[c]; !known {
				break
			}
			chain = append(chain, c)
		}
		d := 0
		if n := len(chain); n > 0 {
			d = depth[parent[chain[n-1]]]
		}
		for i := len(chain) - 1; i >= 0; i-- {
			d++
			depth[chain[i]] = d
		}
		if depth[h] > depth[best] || (depth[h] == depth[best] && bytes.Compare(h[:], best[:]) > 0) {
			best = h
		}
	}
	return best, nil
}

// commitParent returns the first parent of a raw commit (zero for a root).
func commitParent(raw []byte) plumbing.Hash {
	for line := range bytes.Lines(raw) {
		if len(line) <= 1 {
			break // end of the headers
		}
		if p, ok := bytes.CutPrefix(line, []byte("parent ")); ok && len(p) >= 40 {
			return plumbing.NewHash(string(p[:40]))
		}
	}
	return plumbing.ZeroHash
}
