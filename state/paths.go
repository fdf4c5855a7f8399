package state

import (
	"slices"
	"sort"
	"strings"
)

// pathSet is the tip's record paths in byte order, for the queries that
// list a folder (List, Runs, Installations, Settings, Tx.List). It holds
// the strings the files map is keyed by (16 bytes a path), where the git
// trees it replaces held an entry of 48 bytes a file and a node a folder:
// the trees themselves stay in the packs (tipTrees). The paths sit in
// sorted blocks of at most pathBlock, so a write moves one block's worth.
type pathSet struct {
	blocks [][]string // each sorted, non-empty; blocks in order
}

// pathBlock is the most paths one block holds; a fuller one is split.
const pathBlock = 512

// newPathSet builds the set of paths, which must be sorted and distinct.
func newPathSet(sorted []string) *pathSet {
	ps := &pathSet{}
	for i := 0; i < len(sorted); i += pathBlock / 2 {
		j := min(len(sorted), i+pathBlock/2)
		ps.blocks = append(ps.blocks, sorted[i:j:j])
	}
	return ps
}

// block returns the index of the block where p belongs: the first whose
// last path is not below p (the last block when p is above them all).
func (ps *pathSet) block(p string) int {
	i := sort.Search(len(ps.blocks), func(i int) bool {
		b := ps.blocks[i]
		return b[len(b)-1] >= p
	})
	return min(i, len(ps.blocks)-1)
}

// add inserts p; it does nothing when p is in the set.
func (ps *pathSet) add(p string) {
	if len(ps.blocks) == 0 {
		ps.blocks = [][]string{{p}}
		return
	}
	bi := ps.block(p)
	b := ps.blocks[bi]
	i, found := slices.BinarySearch(b, p)
	if found {
		return
	}
	b = slices.Insert(b, i, p)
	if len(b) <= pathBlock {
		ps.blocks[bi] = b
		return
	}
	half := len(b) / 2
	lo, hi := slices.Clip(b[:half]), slices.Clone(b[half:])
	ps.blocks = slices.Insert(ps.blocks, bi+1, hi)
	ps.blocks[bi] = lo
}

// remove deletes p; it does nothing when p is not in the set.
func (ps *pathSet) remove(p string) {
	if len(ps.blocks) == 0 {
		return
	}
	bi := ps.block(p)
	b := ps.blocks[bi]
	i, found := slices.BinarySearch(b, p)
	if !found {
		return
	}
	if b = slices.Delete(b, i, i+1); len(b) == 0 {
		ps.blocks = slices.Delete(ps.blocks, bi, bi+1)
		return
	}
	ps.blocks[bi] = b
}

// list returns the paths under dir ("" is the root), in order; with deep
// unset, only those directly in it.
func (ps *pathSet) list(dir string, deep bool) []string {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []string
	if len(ps.blocks) == 0 {
		return nil
	}
	bi := ps.block(prefix)
	i, _ := slices.BinarySearch(ps.blocks[bi], prefix)
	for ; bi < len(ps.blocks); bi, i = bi+1, 0 {
		for _, p := range ps.blocks[bi][i:] {
			if !strings.HasPrefix(p, prefix) {
				return out
			}
			if deep || strings.IndexByte(p[len(prefix):], '/') < 0 {
				out = append(out, p)
			}
		}
	}
	return out
}
