package state

import (
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// coldTier is the part of a snapshot kept on disk: the finished mailboxes
// of a cold file, but those made warm since. A mailbox is in memory whole
// (files, paths and every index, as any record) or cold whole: then memory
// holds nothing of it but its runs in the day buckets and a count in its
// project, and the queries read it from the file.
type coldTier struct {
	file *coldFile
	// warm are the folders of the file's mailboxes whose records memory
	// holds since (written to, or deleted): the file's entries of them are
	// not read.
	warm map[string]bool
	n    int // records of the file's mailboxes not warm
}

// coldDir reports whether the mailbox in folder dir is cold.
func (s *snapshot) coldDir(dir string) bool {
	if s.cold == nil || dir == "" || s.cold.warm[dir] {
		return false
	}
	if _, hot := s.files[dir+"/mailbox.json"]; hot {
		return false
	}
	_, ok, err := s.cold.file.record(dir + "/mailbox.json")
	if err == nil {
		return ok
	}
	// The file cannot say: a folder the branch holds and memory does not
	// is cold (warmUp reads it from the branch then); a new one is not.
	n, err := s.trees.tree(dir)
	return n != nil || err != nil
}

// rec returns the record at path, from memory or the cold file; nil when
// there is none. A cold record the file cannot give back is unreadable.
func (s *snapshot) rec(path string) *record {
	if r := s.files[path]; r != nil || s.cold == nil {
		return r
	}
	dir := mailboxDirOf(path)
	if dir == "" || s.cold.warm[dir] {
		return nil
	}
	if _, hot := s.files[dir+"/mailbox.json"]; hot { // a new record of a mailbox in memory: no read
		return nil
	}
	e, ok, err := s.cold.file.record(path)
	if err != nil {
		return &record{err: &UnreadableError{Path: path, Commit: s.cold.file.tip.String(), Err: err}}
	}
	if !ok {
		return nil
	}
	return s.coldRecord(&e)
}

// coldRecord is the record of a cold entry, with the value memory would
// keep of it.
func (s *snapshot) coldRecord(e *ckEntry) *record {
	r := &record{hash: e.hash}
	switch e.tag {
	case ckMailbox:
		r.val = &mailboxLite{Title: e.title, t: e.t, quarantined: e.quarantined}
	case ckRun:
		c, ok := s.ov.classIDs[e.class]
		if !ok {
			r.err = &UnreadableError{Path: e.path, Commit: s.cold.file.tip.String(), Err: fmt.Errorf("%w: run class %v not in its days", errCold, e.class)}
			break
		}
		r.val = &runLite{ID: e.recordID(), t: e.t, day: e.day, class: c}
	case ckSession:
		r.val = &sessionLite{path: e.path, ID: e.recordID(), RunID: e.runID, AdapterID: e.adapter, sec: e.sec, nsec: e.nsec,
			ResumeOf: e.resumeOf, tot: e.tot, native: e.native, failed: e.failed, fallback: e.fallback}
	case ckBlob:
		raw, err := s.body(r)
		if err == nil {
			r.val, err = decodeRecord(e.path, raw)
		}
		if err != nil {
			r.err = &UnreadableError{Path: e.path, Commit: s.cold.file.tip.String(), Err: err}
		}
	}
	return r
}

// coldDirs returns the folders of the cold mailboxes paths are in.
func (s *snapshot) coldDirs(paths iter.Seq[string]) []string {
	var out []string
	for p := range paths {
		if dir := mailboxDirOf(p); !slices.Contains(out, dir) && s.coldDir(dir) {
			out = append(out, dir)
		}
	}
	return out
}

// warmUp moves the cold mailbox in folder dir into memory: from the cold
// file, or, when the file cannot give it back, from the branch's trees,
// which hold what the file held of it (a cold mailbox is unchanged since
// it went cold).
func (s *snapshot) warmUp(dir string) error {
	entries, err := s.cold.file.group(dir)
	if err != nil {
		var terr error
		if entries, terr = s.treeGroup(dir); terr != nil {
			return fmt.Errorf("read the finished mailbox %s from %s: %w; from the branch: %w", dir, coldName, err, terr)
		}
	}
	recs := make([]*record, len(entries))
	for i := range entries {
		if recs[i] = s.coldRecord(&entries[i]); recs[i].err != nil {
			return fmt.Errorf("read the finished mailbox %s from %s: %w", dir, coldName, recs[i].err)
		}
	}
	s.coldBuckets(&coldGroup{dir: dir, entries: entries}, -1)
	for i := range entries {
		e := &entries[i]
		for _, rt := range e.routes {
			s.claimRoute(rt, e.path)
		}
		s.setFile(e.path, recs[i])
		s.index(e.path, recs[i])
	}
	s.cold.warm[dir] = true
	s.cold.n -= len(entries)
	return nil
}

// treeGroup returns the entries of the records under folder dir, in path
// order, read from the snapshot's trees (the journal's writes included)
// and decoded as a full load decodes them.
func (s *snapshot) treeGroup(dir string) ([]ckEntry, error) {
	var out []ckEntry
	err := s.treeFiles(dir, func(p string, h plumbing.Hash) error {
		raw, err := s.body(&record{hash: h})
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		v, derr := decodeRecord(p, raw)
		out = append(out, entryOf(p, h, v, derr != nil))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ckEntry) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// treeFiles calls fn with the path and blob of each file under folder dir
// ("": all) of the snapshot's trees, the journal's writes included.
func (s *snapshot) treeFiles(dir string, fn func(path string, blob plumbing.Hash) error) error {
	n, err := s.trees.tree(dir)
	if err != nil || n == nil {
		return err
	}
	for _, e := range n.entries {
		p := e.name
		if dir != "" {
			p = dir + "/" + e.name
		}
		if e.dir {
			err = s.treeFiles(p, fn)
		} else {
			err = fn(p, e.hash)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// freeze drops from memory the mailboxes of groups, which the tier's file
// now holds; the caller holds the store's write lock.
func (s *snapshot) freeze(groups []coldGroup) {
	for i := range groups {
		g := &groups[i]
		for j := range g.entries {
			e := &g.entries[j]
			r := s.files[e.path]
			if r == nil {
				continue
			}
			if e.tag == ckMailbox {
				for _, rt := range e.routes {
					s.unclaimRoute(rt, e.path)
				}
				delete(s.mailboxFiles, e.path)
				delete(s.openMailboxes, e.path)
				s.ovUnindex(e.path, r)
			} else {
				s.unindex(e.path, r)
			}
			s.deleteFile(e.path)
		}
		s.coldBuckets(g, 1)
		s.cold.n += len(g.entries)
	}
}

// coldBuckets adds the runs of a cold mailbox to the day buckets and its
// project's count of cold mailboxes (sign 1), or takes them away (-1).
func (s *snapshot) coldBuckets(g *coldGroup, sign int64) {
	_, key := g.mailbox()
	if key == "" {
		return
	}
	o := &s.ov
	p := o.projectByKey(key)
	if p == nil {
		return
	}
	runTotals := groupRuns(g)
	for i := range g.entries {
		switch e := &g.entries[i]; e.tag {
		case ckMailbox:
			p.cold += int(sign)
		case ckRun:
			c := o.classOf(e.class)
			t := runTotals[e.path]
			p.days.addRaw(int64(e.day), c, 1, t, sign)
			o.days.addRaw(int64(e.day), c, 1, t, sign)
		}
	}
	o.dropProject(p)
}

// listFiles returns the file paths under dir, recursively when deep is set,
// in path order: memory's and the cold file's.
func (s *snapshot) listFiles(dir string, deep bool) []string {
	hot := s.paths.list(dir, deep)
	if s.cold == nil || (dir != "" && dir != "mailboxes" && !strings.HasPrefix(dir, "mailboxes/")) {
		return hot
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var cold []string
	for _, p := range s.coldPaths(dir) {
		if deep || strings.IndexByte(p[len(prefix):], '/') < 0 {
			cold = append(cold, p)
		}
	}
	if len(cold) == 0 {
		return hot
	}
	out := append(hot, cold...)
	sort.Strings(out)
	return out
}

// runPath returns the path of the run whose record name is name.
func (s *snapshot) runPath(name string) (string, bool) {
	if p, ok := s.runs[name]; ok || s.cold == nil {
		return p, ok
	}
	p, err := s.cold.file.run(name)
	if err != nil || p == "" || s.cold.warm[mailboxDirOf(p)] {
		return "", false
	}
	return p, true
}

// coldChanged reports whether the tier's file no longer says what is cold:
// mailboxes were made warm.
func (s *snapshot) coldChanged() bool {
	if s.cold == nil {
		return false
	}
	return len(s.cold.warm) > 0
}

// openCold opens the cold file of repo that checkpoint h names and makes
// it the snapshot's cold tier.
func (s *snapshot) openCold(repo string, h ckHeader) error {
	f, err := openColdFile(filepath.Join(repo, coldName), true)
	if err != nil {
		return err
	}
	if f.id != h.cold {
		f.Close()
		return fmt.Errorf("%s is not the one the checkpoint names (size %d and checksum %08x, not %d and %08x)", coldName, f.id.size, f.id.sum, h.cold.size, h.cold.sum)
	}
	if err := s.installCold(f); err != nil {
		f.Close()
		return err
	}
	return nil
}

// installCold makes f the tier of a snapshot that holds none of its
// mailboxes: its runs go into the day buckets, its mailboxes into their
// projects' counts.
func (s *snapshot) installCold(f *coldFile) error {
	o := &s.ov
	for d, err := range f.days() {
		if err != nil {
			return fmt.Errorf("%s: %w", coldName, err)
		}
		p := o.projectByKey(d.project)
		if p == nil {
			return fmt.Errorf("%w: day of project %q", errCold, d.project)
		}
		c := o.classOf(d.class)
		p.days.addRaw(d.day, c, int(d.v.runs), d.v.tot, 1)
		o.days.addRaw(d.day, c, int(d.v.runs), d.v.tot, 1)
	}
	for _, name := range f.f.Names() {
		if key, ok := strings.CutPrefix(name, coldMailboxes+"/"); ok {
			p := o.projectByKey(key)
			if p == nil {
				return fmt.Errorf("%w: table %q", errCold, name)
			}
			p.cold += f.f.Table(name).Len()
		}
	}
	s.cold = &coldTier{file: f, warm: map[string]bool{}, n: f.f.Table(coldRecords).Len()}
	return nil
}

// coldGroupOf returns the cold mailbox of id's entries, read from the
// file (false when it is not cold).
func (s *snapshot) coldGroupOf(mbID string) (*coldGroup, bool, error) {
	if s.cold == nil {
		return nil, false, nil
	}
	dir, err := mailboxDir(mbID)
	if err != nil || !s.coldDir(dir) {
		return nil, false, nil
	}
	entries, err := s.cold.file.group(dir)
	if err != nil {
		return nil, false, fmt.Errorf("read the finished mailbox %s from %s: %w", dir, coldName, err)
	}
	return &coldGroup{dir: dir, entries: entries}, true, nil
}

// mailboxIndexOf returns what the session resolver asks of mailbox id:
// memory's index, or one made from the cold file.
func (s *snapshot) mailboxIndexOf(mbID string) (*mailboxIndex, error) {
	if m := s.mailboxes[mbID]; m != nil {
		return m, nil
	}
	g, ok, err := s.coldGroupOf(mbID)
	if !ok {
		return nil, err
	}
	m := &mailboxIndex{}
	for i := range g.entries {
		if e := &g.entries[i]; e.tag == ckSession {
			m.sessions = append(m.sessions, s.coldRecord(e).val.(*sessionLite))
		}
	}
	if len(m.sessions) == 0 {
		return nil, nil
	}
	sort.SliceStable(m.sessions, func(i, j int) bool { return sessionLess(m.sessions[i], m.sessions[j]) })
	return m, nil
}

// statsOf returns mailbox id's runs and totals: memory's, or made from the
// cold file as the overview would index them.
func (s *snapshot) statsOf(mbID string) (*mbStats, error) {
	if st := s.ov.stats[mbID]; st != nil {
		return st, nil
	}
	g, ok, err := s.coldGroupOf(mbID)
	if !ok {
		return nil, err
	}
	o := &s.ov
	p := o.projects[projectKey(mbID)]
	if p == nil {
		return nil, nil
	}
	st := &mbStats{}
	runs := map[string]*runEntry{}
	for i := range g.entries {
		e := &g.entries[i]
		if e.tag != ckRun || !strings.Contains(e.path, "/runs/") {
			continue
		}
		r := s.coldRecord(e)
		if r.err != nil {
			return nil, r.err
		}
		v := r.val.(*runLite)
		re := &runEntry{r: v, path: e.path, proj: p, k: ovKey{v.t, v.ID}, day: int64(v.day)}
		runs[e.path] = re
	}
	for i := range g.entries {
		e := &g.entries[i]
		if e.tag != ckSession {
			continue
		}
		ls := s.coldRecord(e).val.(*sessionLite)
		st.sessions++
		st.tot.add(ls.tot, 1)
		if re := runs[runPathIn(g.dir, ls.RunID)]; re != nil && re.r.ID == ls.RunID {
			re.tot.add(ls.tot, 1)
			if re.last == nil || sessionLess(re.last, ls) {
				re.last = ls
			}
		}
	}
	for _, re := range runs {
		st.runs.insert(re)
	}
	return st, nil
}

// coldMailboxPaths returns the paths of the cold mailboxes' records.
func (s *snapshot) coldMailboxPaths() []string {
	if s.cold == nil {
		return nil
	}
	var out []string
	for _, p := range s.coldPaths("mailboxes") {
		if kindOf(p) == "mailbox" {
			out = append(out, p)
		}
	}
	return out
}

// coldPaths returns the paths of the cold records under folder dir ("":
// all), in order: the file's, or, when it cannot give them, those of the
// branch's trees that memory does not hold.
func (s *snapshot) coldPaths(dir string) []string {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []string
	for p, err := range s.cold.file.paths(prefix) {
		if err != nil {
			out = out[:0]
			terr := s.treeFiles(dir, func(p string, _ plumbing.Hash) error {
				if s.files[p] == nil && mailboxDirOf(p) != "" && !s.cold.warm[mailboxDirOf(p)] {
					out = append(out, p)
				}
				return nil
			})
			if terr != nil {
				return nil // neither can say: the records are read as unreadable, if at all
			}
			sort.Strings(out)
			return out
		}
		if !s.cold.warm[mailboxDirOf(p)] {
			out = append(out, p)
		}
	}
	return out
}

// sessionsOfRun returns the paths of the llm sessions of run id, whose
// record is at runPath: memory's, and the cold file's in its mailbox (or
// why the file could not give them).
func (s *snapshot) sessionsOfRun(id, runPath string) ([]string, error) {
	out := slices.Collect(s.sessionsByRun.of(id))
	mbID, _, ok := mailboxIDOf(runPath)
	if !ok {
		return out, nil
	}
	g, ok, err := s.coldGroupOf(mbID)
	if err != nil || !ok {
		return out, err
	}
	for i := range g.entries {
		if e := &g.entries[i]; e.tag == ckSession && e.runID == id {
			out = append(out, e.path)
		}
	}
	return out, nil
}

// records yields every record in path order, memory's and the cold
// file's (read through in order, not looked up one by one). A cold record
// the file cannot give back comes unreadable, at the path of the file.
func (s *snapshot) records() iter.Seq2[string, *record] {
	return func(yield func(string, *record) bool) {
		hot := s.paths.list("", true)
		i := 0
		if s.cold != nil {
			for e, err := range s.cold.file.f.Table(coldRecords).Ascend(nil) {
				var r *record
				p := string(e.Key)
				if err == nil {
					if s.cold.warm[mailboxDirOf(p)] {
						continue
					}
					var ce ckEntry
					if ce, err = parseColdValue(p, e.Value, s.cold.file.strs); err == nil {
						r = s.coldRecord(&ce)
					}
				}
				if err != nil {
					p, r = coldName, &record{err: &UnreadableError{Path: coldName, Commit: s.cold.file.tip.String(), Err: err}}
				}
				for ; i < len(hot) && hot[i] < p; i++ {
					if !yield(hot[i], s.files[hot[i]]) {
						return
					}
				}
				if !yield(p, r) {
					return
				}
				if err != nil {
					break // the file's damage said once; memory's records go on
				}
			}
		}
		for ; i < len(hot); i++ {
			if !yield(hot[i], s.files[hot[i]]) {
				return
			}
		}
	}
}
