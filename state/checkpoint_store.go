package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// useCheckpoint turns the open checkpoint on (Open reads it, a writable
// store writes it); the benchmarks turn it off to measure a full load.
var useCheckpoint = true

func checkpointPath(repo string) string { return filepath.Join(repo, checkpointName) }

// readCheckpointFile reads the checkpoint of repo whole, refusing one
// larger than ckMaxSize; a missing one is fs.ErrNotExist.
func readCheckpointFile(repo string) ([]byte, error) {
	f, err := os.Open(checkpointPath(repo))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCheckpoint, err)
	}
	if st.Size() > ckMaxSize || st.Size() < 0 {
		return nil, ckErrorf("size %d", st.Size())
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", errCheckpoint, f.Name(), err)
	}
	return data, nil
}

// checkpointTip returns the commit repo's checkpoint says it is of, and
// the cold file it names, reading its header alone (its checksum is not
// checked); zero when there is none or it is not of this format.
func checkpointTip(repo string) (plumbing.Hash, coldID) {
	var tip plumbing.Hash
	f, err := os.Open(checkpointPath(repo))
	if err != nil {
		return tip, coldID{}
	}
	defer f.Close()
	head := make([]byte, ckHeaderSize)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:8]) != checkpointMagic ||
		binary.LittleEndian.Uint32(head[8:]) != checkpointVersion {
		return tip, coldID{}
	}
	copy(tip[:], head[12:32])
	return tip, coldID{size: int64(binary.LittleEndian.Uint64(head[84:])), sum: binary.LittleEndian.Uint32(head[92:])}
}

// writeCheckpointFile replaces repo's checkpoint by data: written to a
// temporary file, synced and renamed, the folder synced.
func writeCheckpointFile(repo string, data []byte) error {
	tmp := checkpointPath(repo) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write open checkpoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, checkpointPath(repo))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write open checkpoint: %w", err)
	}
	return syncDirFD(repo)
}

// retargetCheckpoint makes repo's checkpoint of commit from, if it is
// one, the checkpoint of commit to: a commit of the same tree and the same
// journal trailer, as Compact writes (the records, and so the checkpoint
// and the cold file it names, are the same).
func retargetCheckpoint(repo string, from, to plumbing.Hash) error {
	data, err := readCheckpointFile(repo)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return nil // not usable anyway: the next Open reads every record
	}
	h, err := parseCkHeader(data)
	if err != nil || h.tip != from {
		return nil
	}
	copy(data[12:32], to[:])
	if err := writeCheckpointFile(repo, fixCkSum(data)); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// fixCkSum rewrites a checkpoint's checksum after a change of its bytes.
func fixCkSum(data []byte) []byte {
	binary.LittleEndian.PutUint32(data[len(data)-4:], crc32.Checksum(data[:len(data)-4], crc32c))
	return data
}

// opened is what Open read: the snapshot, its problems and, when a
// checkpoint gave it, the journal sequence the tip folded.
type opened struct {
	snap     *snapshot
	problems []*UnreadableError
	folded   uint64
	fromCk   bool
}

// loadFromCheckpoint builds the tip's snapshot from repo's checkpoint;
// an error wrapping fs.ErrNotExist means there is none (or no tip), any
// other why it was not used.
func loadFromCheckpoint(repo string, packList []packInfo) (opened, error) {
	if !useCheckpoint {
		return opened{}, fs.ErrNotExist
	}
	stor := openStorage(repo)
	defer stor.Close()
	tip, err := readTip(stor)
	if err != nil || tip.IsZero() {
		return opened{}, errors.Join(fs.ErrNotExist, err)
	}
	// Beside a running server (a read-only store) the checkpoint is stale
	// as a rule: its header says so without reading and summing the rest.
	if at, _ := checkpointTip(repo); !at.IsZero() && at != tip {
		return opened{}, fmt.Errorf("%w: made at commit %s, the branch is at %s", errStaleCheckpoint, at, tip)
	}
	data, err := readCheckpointFile(repo)
	if err != nil {
		return opened{}, err
	}
	if packList == nil {
		if packList, err = listPacks(repo, false); err != nil {
			return opened{}, fmt.Errorf("%w: %w", errCheckpoint, err)
		}
	}
	packList = slices.Clone(packList)
	slices.SortStableFunc(packList, func(a, b packInfo) int { return b.objects - a.objects })
	packs, err := openPacks(repo, packList)
	if err != nil {
		return opened{}, fmt.Errorf("%w: %w", errCheckpoint, err)
	}
	defer closePacks(packs)
	snap, problems, h, err := loadCheckpoint(data, tip, &objectReader{packs: packs, stor: stor})
	if err != nil {
		return opened{}, err
	}
	if h.cold != (coldID{}) {
		if err := snap.openCold(repo, h); err != nil {
			return opened{}, fmt.Errorf("%w: %w", errCheckpoint, err)
		}
	}
	return opened{snap: snap, problems: problems, folded: h.folded, fromCk: true}, nil
}

// saveCheckpoint writes the checkpoint of the store's tip at Close, once
// the journal is folded and no write runs: the snapshot is the tip. First
// the finished mailboxes memory holds are made cold (freezeCold), and the
// checkpoint holds the records left in memory, naming the cold file. The
// records of the checkpoint already there (whatever its commit) are
// taken as they are where their path and blob are the same (their bytes
// copied, see ckCopier); the others are read and decoded from their blobs, so that the checkpoint holds
// what a full load computes, not values written through this process.
func (s *Store) saveCheckpoint() error {
	snap := s.snap
	if !useCheckpoint || snap.tip.IsZero() {
		return nil
	}
	stor := openStorage(s.dir)
	tip, err := readTip(stor)
	stor.Close()
	if err != nil || tip != snap.tip {
		return err // git moved the branch: the next Open loads it whole
	}
	f, err := captureFreeze(snap) // no write runs: no lock to read
	if err != nil {
		return err
	}
	var cold coldID
	if snap.cold != nil {
		cold = snap.cold.file.id
	}
	if at, names := checkpointTip(s.dir); len(f.groups) == 0 && !snap.coldChanged() && at == tip && names == cold {
		return nil // its damage, if any, is caught at the next Open, which replaces it
	}
	if len(f.groups) > 0 || snap.coldChanged() {
		if err := s.freezeCold(f); err != nil {
			return err
		}
	}
	old, _ := readCheckpointFile(s.dir)
	_, prev, err := openCheckpoint(old)
	if err != nil {
		prev = nil
	}
	folded, err := s.foldedSeqIn(tip)
	if err != nil {
		return err
	}
	enc := newCkEncoder()
	enc.recs = make([]byte, 0, len(old)+len(old)/8) // the records change little from one Close to the next
	var was *ckCopier
	more := false
	if prev != nil {
		was = newCkCopier(prev)
		more = was.next()
	}
	for _, block := range snap.paths.blocks {
		for _, p := range block {
			for more && string(was.path) < p {
				more = was.next()
			}
			r := snap.files[p]
			if more && string(was.path) == p && was.hash == r.hash {
				if more = was.copyTo(enc, p); more {
					continue
				}
			}
			e, err := snap.entryFromBlob(p, r)
			if err != nil {
				return err
			}
			enc.add(&e)
		}
	}
	cold = coldID{}
	if snap.cold != nil {
		cold = snap.cold.file.id
	}
	return writeCheckpointFile(s.dir, enc.bytes(tip, snap.trees.root, folded, cold))
}

// entryFromBlob is the checkpoint entry of the record at path, decoded
// from its blob.
func (s *snapshot) entryFromBlob(path string, r *record) (ckEntry, error) {
	raw, err := s.body(r)
	if err != nil {
		return ckEntry{}, fmt.Errorf("write open checkpoint: %s: %w", path, err)
	}
	v, err := decodeRecord(path, raw)
	return entryOf(path, r.hash, v, err != nil), nil
}

// loadedCk is what a full load at Open encoded of commit tip (root its
// tree), to write as the checkpoint once Open succeeds.
type loadedCk struct {
	enc       *ckEncoder
	tip, root plumbing.Hash
}

// saveLoaded writes, in the background, the checkpoint a full load
// encoded; Close waits for it.
func (s *Store) saveLoaded(ck *loadedCk) {
	s.ckWG.Add(1)
	go func() {
		defer s.ckWG.Done()
		folded, err := foldedSeq(s.dir, ck.tip)
		if err == nil {
			err = writeCheckpointFile(s.dir, ck.enc.bytes(ck.tip, ck.root, folded, coldID{}))
		}
		if err != nil {
			s.log.Warn("write the state open checkpoint fails", "err", err)
		}
	}()
}
