package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/alchemic-studio/alfred/state/internal/table"
	"github.com/go-git/go-git/v5/plumbing"
)

// coldGroup is a finished mailbox to make cold: its folder and its
// records' entries in path order, as entryOf makes them (a readable
// record each: a mailbox with an unreadable record stays in memory).
type coldGroup struct {
	dir     string
	entries []ckEntry
}

// recordID is the id of a run or llm session entry.
func (e *ckEntry) recordID() string {
	if e.idName {
		return recordName(e.path)
	}
	return e.id
}

// coldKV is one entry of a table being written.
type coldKV struct{ k, v []byte }

// coldTables are the entries a build adds, by table, and the days'
// aggregates it changes, by dayKey.
type coldTables struct {
	byTable map[string][]coldKV
	days    map[string]dayValue
	values  *ckEncoder // of the records' values, with the strings table
}

// mailbox returns the id of g's mailbox ("" when its folder names none)
// and its project's key ("" when the id does not parse: the overview
// lists it nowhere).
func (g *coldGroup) mailbox() (mbID, project string) {
	mbID, _, ok := mailboxIDOf(g.dir + "/mailbox.json")
	if !ok {
		return "", ""
	}
	if _, err := ParseMailboxID(mbID); err != nil {
		return mbID, ""
	}
	return mbID, projectKey(mbID)
}

// groupRuns returns, for each run of g by path, the totals of its llm
// sessions, as the overview links them (a session to the run of its
// RunID in the same mailbox).
func groupRuns(g *coldGroup) map[string]totals {
	runs := map[string]totals{}
	ids := map[string]string{}
	for i := range g.entries {
		if e := &g.entries[i]; e.tag == ckRun {
			runs[e.path] = totals{}
			ids[e.path] = e.recordID()
		}
	}
	for i := range g.entries {
		e := &g.entries[i]
		if e.tag != ckSession {
			continue
		}
		rp := runPathIn(g.dir, e.runID)
		if t, ok := runs[rp]; ok && ids[rp] == e.runID {
			t.add(e.tot, 1)
			runs[rp] = t
		}
	}
	return runs
}

// add adds g's entries to the tables, and its runs to the days (sign 1),
// or only takes its runs away from the days (sign -1).
func (c *coldTables) add(g *coldGroup, sign int64) {
	mbID, proj := g.mailbox()
	if mbID == "" {
		return
	}
	runTotals := groupRuns(g)
	for i := range g.entries {
		e := &g.entries[i]
		if sign > 0 {
			c.put(coldRecords, []byte(e.path), coldValue(c.values, e))
		}
		switch {
		case e.tag == ckRun && proj != "":
			k := string(dayKey(proj, int64(e.day), e.class))
			d := c.days[k]
			d.runs += sign
			d.tot.add(runTotals[e.path], sign)
			c.days[k] = d
			if sign > 0 {
				v := appendRunListValue(nil, e.path, e.class)
				c.put(coldRunsByTime, listKey(ovKey{e.t, e.recordID()}), v)
				c.put(coldRunsByTime+"/"+proj, listKey(ovKey{e.t, e.recordID()}), v)
			}
		case e.tag == ckMailbox && sign > 0:
			for _, rt := range e.routes {
				c.put(coldRoutes, append(routeKey(rt), e.path...), nil)
			}
			if proj != "" {
				v := appendMailboxListValue(nil, e.path, e.title, e.quarantined)
				c.put(coldMailboxes, listKey(ovKey{e.t, mbID}), v)
				c.put(coldMailboxes+"/"+proj, listKey(ovKey{e.t, mbID}), v)
			}
		}
		if e.tag == ckRun && sign > 0 {
			c.put(coldRuns, []byte(recordName(e.path)), []byte(e.path))
		}
	}
}

func (c *coldTables) put(table string, k, v []byte) {
	c.byTable[table] = append(c.byTable[table], coldKV{k, v})
}

// writeCold writes the cold file of commit tip (root its tree): the
// mailboxes of old (nil: none) but those made warm since (gone, by
// folder), and the groups of add (none of them cold in old).
// Where two runs share an id, the greater path is kept, as memory keeps it.
func writeCold(w io.Writer, tip, root plumbing.Hash, old *coldFile, gone map[string]bool, add []coldGroup) error {
	c := coldTables{byTable: map[string][]coldKV{}, days: map[string]dayValue{}, values: newColdValues(nil)}
	if old != nil {
		c.values = newColdValues(old.strs)
	}
	for i := range add {
		c.add(&add[i], 1)
	}
	if old != nil {
		for _, dir := range slices.Sorted(maps.Keys(gone)) {
			g, err := old.group(dir)
			if err != nil {
				return fmt.Errorf("write cold file: %w", err)
			}
			c.add(&coldGroup{dir: dir, entries: g}, -1)
		}
	}
	names := []string{coldRecords, coldRuns, coldRoutes, coldMailboxes, coldRunsByTime}
	for name := range c.byTable {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if old != nil {
		for _, name := range old.f.Names() {
			if !slices.Contains(names, name) && name != coldMeta && name != coldDays && name != coldStrings {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names[5:])
	tw := table.NewWriter(w, 4096)
	if err := tw.Begin(coldMeta); err != nil {
		return err
	}
	if err := tw.Add([]byte(coldCommitKey), coldCommit(tip, root)); err != nil {
		return err
	}
	for _, name := range names {
		if err := writeColdTable(tw, name, old, gone, c.byTable[name]); err != nil {
			return fmt.Errorf("write cold file: table %s: %w", name, err)
		}
	}
	if err := writeColdDays(tw, old, c.days); err != nil {
		return fmt.Errorf("write cold file: days: %w", err)
	}
	if err := tw.Begin(coldStrings); err != nil {
		return err
	}
	for i, str := range c.values.list {
		if err := tw.Add(binary.BigEndian.AppendUint32(nil, uint32(i)), []byte(str)); err != nil {
			return fmt.Errorf("write cold file: strings: %w", err)
		}
	}
	return tw.Close()
}

// writeColdTable writes table name: old's entries of mailboxes still cold
// merged with the entries added.
func writeColdTable(tw *table.Writer, name string, old *coldFile, gone map[string]bool, added []coldKV) error {
	slices.SortStableFunc(added, func(a, b coldKV) int { return bytes.Compare(a.k, b.k) })
	if err := tw.Begin(name); err != nil {
		return err
	}
	var prev *coldKV
	emit := func(kv coldKV) error {
		if prev != nil && bytes.Equal(prev.k, kv.k) {
			if coldPathOf(name, kv.k, kv.v) > coldPathOf(name, prev.k, prev.v) {
				prev.v = kv.v
			}
			return nil
		}
		if prev != nil {
			if err := tw.Add(prev.k, prev.v); err != nil {
				return err
			}
		}
		prev = &coldKV{kv.k, kv.v}
		return nil
	}
	for kv, err := range mergeCold(name, old, gone, added) {
		if err != nil {
			return err
		}
		if err := emit(kv); err != nil {
			return err
		}
	}
	if prev != nil {
		return tw.Add(prev.k, prev.v)
	}
	return nil
}

// mergeCold yields, in key order, old's entries of table name whose
// mailbox is still cold, and added (sorted); entries of equal keys both.
func mergeCold(name string, old *coldFile, gone map[string]bool, added []coldKV) iter.Seq2[coldKV, error] {
	return func(yield func(coldKV, error) bool) {
		i := 0
		if old != nil {
			if t := old.f.Table(name); t != nil {
				for e, err := range t.Ascend(nil) {
					if err != nil {
						yield(coldKV{}, err)
						return
					}
					if dir := coldDirOf(name, e.Key, e.Value); dir == "" || gone[dir] {
						continue
					}
					for i < len(added) && bytes.Compare(added[i].k, e.Key) <= 0 {
						if !yield(added[i], nil) {
							return
						}
						i++
					}
					if !yield(coldKV{bytes.Clone(e.Key), bytes.Clone(e.Value)}, nil) {
						return
					}
				}
			}
		}
		for ; i < len(added); i++ {
			if !yield(added[i], nil) {
				return
			}
		}
	}
}

// coldPathOf is the record path an entry of table name is about.
func coldPathOf(name string, k, v []byte) string {
	switch {
	case name == coldRuns:
		return string(v)
	case name == coldRoutes:
		_, p, _ := splitClaim(k)
		return p
	case name == coldMailboxes || strings.HasPrefix(name, coldMailboxes+"/"):
		lv, _ := parseMailboxListValue(v)
		return lv.path
	case name == coldRunsByTime || strings.HasPrefix(name, coldRunsByTime+"/"):
		lv, _ := parseRunListValue(v)
		return lv.path
	}
	return ""
}

// coldDirOf is the folder of the mailbox an entry of table name is about
// ("" when it names none: damage).
func coldDirOf(name string, k, v []byte) string {
	p := coldPathOf(name, k, v)
	if name == coldRecords {
		p = string(k)
	}
	return mailboxDirOf(p)
}

// mailboxDirOf is the folder of the mailbox a record path is under ("" for
// a path outside mailboxes/).
func mailboxDirOf(path string) string {
	n := 0
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			if n++; n == 7 {
				if !strings.HasPrefix(path, "mailboxes/") {
					return ""
				}
				return path[:i]
			}
		}
	}
	return ""
}

// writeColdDays writes the days table: old's aggregates changed by delta,
// those that come to nothing left out.
func writeColdDays(tw *table.Writer, old *coldFile, delta map[string]dayValue) error {
	if err := tw.Begin(coldDays); err != nil {
		return err
	}
	keys := make([]string, 0, len(delta))
	for k := range delta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	emit := func(k []byte, v dayValue) error {
		if v == (dayValue{}) {
			return nil
		}
		return tw.Add(k, appendDayValue(nil, v))
	}
	i := 0
	if old != nil {
		if t := old.f.Table(coldDays); t != nil {
			for e, err := range t.Ascend(nil) {
				if err != nil {
					return err
				}
				for i < len(keys) && cmp.Less(keys[i], string(e.Key)) {
					if err := emit([]byte(keys[i]), delta[keys[i]]); err != nil {
						return err
					}
					i++
				}
				v, err := parseDayValue(e.Value)
				if err != nil {
					return err
				}
				if i < len(keys) && keys[i] == string(e.Key) {
					d := delta[keys[i]]
					v.runs += d.runs
					v.tot.add(d.tot, 1)
					i++
				}
				if err := emit(bytes.Clone(e.Key), v); err != nil {
					return err
				}
			}
		}
	}
	for ; i < len(keys); i++ {
		if err := emit([]byte(keys[i]), delta[keys[i]]); err != nil {
			return err
		}
	}
	return nil
}

// finishedGroups returns the cold groups of the snapshot's finished
// mailboxes in folder order: every mailbox record not open (Mailbox.Finished,
// readable) whose records are all readable.
func (s *snapshot) finishedGroups() ([]coldGroup, error) {
	var out []coldGroup
	for p := range s.mailboxFiles {
		if _, open := s.openMailboxes[p]; open {
			continue
		}
		g, ok, err := s.coldGroup(mailboxDirOf(p))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b coldGroup) int { return strings.Compare(a.dir+"/", b.dir+"/") })
	return out, nil
}

// coldGroup returns the group of the mailbox in folder dir, from the
// values memory keeps (the mailbox's routes read from its body); false
// when one of its records is unreadable.
func (s *snapshot) coldGroup(dir string) (coldGroup, bool, error) {
	g := coldGroup{dir: dir}
	if dir == "" {
		return g, false, nil
	}
	for _, p := range s.listFiles(dir, true) {
		r := s.files[p]
		if r.err != nil {
			return g, false, nil
		}
		var e ckEntry
		switch v := r.val.(type) {
		case *runLite:
			e = ckEntry{path: p, hash: r.hash, tag: ckRun, id: v.ID, t: v.t, day: v.day, class: s.ov.classes[v.class]}
		case *sessionLite:
			e = ckEntry{path: p, hash: r.hash, tag: ckSession, id: v.ID, runID: v.RunID, adapter: v.AdapterID,
				sec: v.sec, nsec: v.nsec, resumeOf: v.ResumeOf, tot: v.tot, native: v.native, failed: v.failed, fallback: v.fallback}
		default:
			var err error
			if e, err = s.entryFromBlob(p, r); err != nil {
				return g, false, err
			}
		}
		if (e.tag == ckRun || e.tag == ckSession) && e.id == recordName(p) {
			e.id, e.idName = "", true
		}
		g.entries = append(g.entries, e)
	}
	return g, len(g.entries) > 0, nil
}
