package state

import (
	"crypto/sha1"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// treeEntry is one entry of an in-memory git tree.
type treeEntry struct {
	name string
	dir  bool
	hash plumbing.Hash
}

// treeNode is one directory of the branch tip, entries in git order.
type treeNode struct {
	hash    plumbing.Hash
	entries []treeEntry
}

// gitLess orders tree entries as git does: folders compare as if their name
// ended with '/'.
func gitLess(a, b treeEntry) bool {
	an, bn := a.name, b.name
	n := min(len(an), len(bn))
	if c := strings.Compare(an[:n], bn[:n]); c != 0 {
		return c < 0
	}
	ac, bc := byte(0), byte(0)
	if len(an) > n {
		ac = an[n]
	} else if a.dir {
		ac = '/'
	}
	if len(bn) > n {
		bc = bn[n]
	} else if b.dir {
		bc = '/'
	}
	return ac < bc
}

// gitObject is an encoded git object ready for a pack.
type gitObject struct {
	typ  plumbing.ObjectType
	data []byte
	hash plumbing.Hash
}

func hashObject(typ plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	h.Write([]byte(typ.String()))
	h.Write([]byte{' '})
	h.Write(strconv.AppendInt(nil, int64(len(data)), 10))
	h.Write([]byte{0})
	h.Write(data)
	var out plumbing.Hash
	h.Sum(out[:0])
	return out
}

func newObject(typ plumbing.ObjectType, data []byte) gitObject {
	return gitObject{typ: typ, data: data, hash: hashObject(typ, data)}
}

func encodeTree(entries []treeEntry) []byte {
	size := 0
	for _, e := range entries {
		size += len(e.name) + 28
	}
	buf := make([]byte, 0, size)
	for _, e := range entries {
		if e.dir {
			buf = append(buf, "40000 "...)
		} else {
			buf = append(buf, "100644 "...)
		}
		buf = append(buf, e.name...)
		buf = append(buf, 0)
		buf = append(buf, e.hash[:]...)
	}
	return buf
}

func parentDir(path string) (dir, base string) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

func depth(dir string) int {
	if dir == "" {
		return 0
	}
	return strings.Count(dir, "/") + 1
}

// fileChange is a blob put (hash set) or delete (deleted) at a path.
type fileChange struct {
	hash    plumbing.Hash
	deleted bool
}

// pendingDir is what a commit changes in one folder: entries put (files,
// or folders rebuilt below) and names deleted.
type pendingDir struct {
	puts map[string]treeEntry
	dels map[string]bool
}

// buildTrees applies file changes to the tip trees and returns the changed
// folders (a folder left empty is removed from its parent) and the new tree
// objects. The tip is not modified; it fails only when a tip tree cannot be
// read.
func buildTrees(tip treeSource, changes map[string]fileChange) (changed map[string]*treeNode, objs []gitObject, err error) {
	byDir := map[string]*pendingDir{}
	get := func(dir string) *pendingDir {
		p := byDir[dir]
		if p == nil {
			p = &pendingDir{puts: map[string]treeEntry{}, dels: map[string]bool{}}
			byDir[dir] = p
		}
		return p
	}
	maxDepth := 0
	for path, c := range changes {
		dir, base := parentDir(path)
		if c.deleted {
			get(dir).dels[base] = true
		} else {
			get(dir).puts[base] = treeEntry{name: base, hash: c.hash}
		}
		maxDepth = max(maxDepth, depth(dir))
	}
	changed = map[string]*treeNode{}
	for d := maxDepth; d >= 0; d-- {
		for _, dir := range dirsAt(byDir, d) {
			var old []treeEntry
			n, err := tip.tree(dir)
			if err != nil {
				return nil, nil, err
			}
			if n != nil {
				old = n.entries
			}
			entries := byDir[dir].apply(old)
			delete(byDir, dir)
			pdir, base := parentDir(dir)
			if dir != "" && len(entries) == 0 {
				get(pdir).dels[base] = true
				continue
			}
			obj := newObject(plumbing.TreeObject, encodeTree(entries))
			objs = append(objs, obj)
			changed[dir] = &treeNode{hash: obj.hash, entries: entries}
			if dir != "" {
				get(pdir).puts[base] = treeEntry{name: base, dir: true, hash: obj.hash}
			}
		}
	}
	return changed, objs, nil
}

// dirsAt returns the folders of byDir at depth d, sorted.
func dirsAt(byDir map[string]*pendingDir, d int) []string {
	var dirs []string
	for dir := range byDir {
		if depth(dir) == d {
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// apply returns the entries of a folder after the changes, in git order:
// the old ones (already in order) merged with the new ones, sorted apart.
func (p *pendingDir) apply(old []treeEntry) []treeEntry {
	kept := make([]treeEntry, 0, len(old)+len(p.puts))
	for _, e := range old {
		if p.dels[e.name] {
			continue
		}
		if ne, ok := p.puts[e.name]; ok {
			ne.dir = e.dir || ne.dir
			kept = append(kept, ne)
			delete(p.puts, e.name)
			continue
		}
		kept = append(kept, e)
	}
	if len(p.puts) == 0 {
		return kept
	}
	added := make([]treeEntry, 0, len(p.puts))
	for _, e := range p.puts {
		added = append(added, e)
	}
	less := func(a, b treeEntry) int {
		if gitLess(a, b) {
			return -1
		}
		return 1
	}
	slices.SortFunc(added, less)
	out := make([]treeEntry, 0, len(kept)+len(added))
	for len(kept) > 0 && len(added) > 0 {
		if gitLess(added[0], kept[0]) {
			out, added = append(out, added[0]), added[1:]
		} else {
			out, kept = append(out, kept[0]), kept[1:]
		}
	}
	return append(append(out, kept...), added...)
}

// treeSource gives the tip's folder trees to buildTrees: nil for a folder
// the tip does not have.
type treeSource interface {
	tree(dir string) (*treeNode, error)
}

// tipTrees is the tip's git trees as a commit needs them: its root tree's
// hash, and the trees themselves read from the packs on demand through a
// bounded cache. A commit reads the folders on its paths only (about ten
// trees a record, most of them shared), so the trees of the whole tip,
// which a store of a million records holds as a few hundred thousand
// folders, need not stay in memory. Only the committer reads them.
type tipTrees struct {
	root  plumbing.Hash
	cache *treeCache
}

// emptyTree is the hash of the tree with no entries, the root of an empty
// branch (it is in no pack).
var emptyTree = hashObject(plumbing.TreeObject, nil)

// tree returns the folder dir of the tip, walking from the root.
func (t *tipTrees) tree(dir string) (*treeNode, error) {
	h := t.root
	entries, err := t.cache.get(h)
	if err != nil {
		return nil, err
	}
	for rest := dir; rest != ""; {
		name, tail, _ := strings.Cut(rest, "/")
		rest = tail
		i := slices.IndexFunc(entries, func(e treeEntry) bool { return e.dir && e.name == name })
		if i < 0 {
			return nil, nil
		}
		h = entries[i].hash
		if entries, err = t.cache.get(h); err != nil {
			return nil, fmt.Errorf("read tree %q: %w", dir, err)
		}
	}
	return &treeNode{hash: h, entries: entries}, nil
}

// treeCache holds trees by hash, read from the packs on a miss; it keeps
// at most max entries (of all its trees), dropping arbitrary trees when
// full. Trees are immutable, so a cached one is never stale, whatever the
// tip.
type treeCache struct {
	mu      sync.Mutex
	max     int
	entries int // of the trees held
	nodes   map[plumbing.Hash][]treeEntry
	read    func(plumbing.Hash) ([]byte, error) // the raw tree
}

// treeCacheEntries bounds the cache, about 3 MiB of entries: a batch of a
// few hundred records reads a few thousand trees, most of a few entries,
// those of the shard folders (a hundred mailboxes each) and of the folders
// above them of some hundreds.
const treeCacheEntries = 1 << 16

func newTreeCache(read func(plumbing.Hash) ([]byte, error)) *treeCache {
	return &treeCache{max: treeCacheEntries, nodes: map[plumbing.Hash][]treeEntry{}, read: read}
}

// get returns the entries of tree h, in git order.
func (c *treeCache) get(h plumbing.Hash) ([]treeEntry, error) {
	if h == emptyTree {
		return nil, nil
	}
	c.mu.Lock()
	entries, ok := c.nodes[h]
	c.mu.Unlock()
	if ok {
		return entries, nil
	}
	raw, err := c.read(h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	if entries, err = parseTree(raw, nil); err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	c.put(h, entries)
	return entries, nil
}

// put caches tree h, making room when the cache is full; a tree larger
// than the cache is not kept.
func (c *treeCache) put(h plumbing.Hash, entries []treeEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[h]; ok || len(entries) > c.max {
		return
	}
	if c.entries+len(entries) > c.max {
		for k, e := range c.nodes {
			if c.entries+len(entries) <= c.max*3/4 {
				break
			}
			delete(c.nodes, k)
			c.entries -= len(e)
		}
	}
	c.nodes[h] = entries
	c.entries += len(entries)
}
