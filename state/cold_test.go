package state

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// coldStores are stores to make cold files of: the checkpoint tests' (every
// kind of record, readable and not, a finished mailbox with a run in
// progress, two issues on one branch) and a month of the synthetic year.
func coldStores(t *testing.T) map[string]*Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]*Store{}
	dir := filepath.Join(t.TempDir(), "kinds")
	buildCheckpointStore(t, dir, Options{})
	useCheckpoint = false
	s, err := Open(ctx, dir, Options{})
	useCheckpoint = true
	if err != nil {
		t.Fatal(err)
	}
	out["kinds"] = s
	yearDir := filepath.Join(t.TempDir(), "year")
	buildYearStore(t, yearDir)
	useCheckpoint = false // every record in memory, to make the files of
	y, err := Open(ctx, yearDir, Options{})
	useCheckpoint = true
	if err != nil {
		t.Fatal(err)
	}
	out["year"] = y
	for _, s := range out {
		t.Cleanup(func() { s.Close() })
	}
	return out
}

// makeCold writes the cold file of snap's finished mailboxes over old (nil:
// none) and opens it from memory.
func makeCold(t *testing.T, snap *snapshot, old *coldFile, gone map[string]bool, add []coldGroup) *coldFile {
	t.Helper()
	var buf bytes.Buffer
	if err := writeCold(&buf, snap.tip, snap.trees.root, old, gone, add); err != nil {
		t.Fatal(err)
	}
	c, err := newColdFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()), true)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestColdFileAnswersAsMemory: a cold file of a store's finished mailboxes
// answers what memory answers of them (the records' entries as a full load
// decodes them from their blobs, the folders, the routes, the runs by id,
// the overview's lists in order and from a cursor, the days' aggregates),
// and nothing of the mailboxes left in memory; a file made again without
// some mailboxes drops them from every table, and one adding them back is
// the first byte for byte.
func TestColdFileAnswersAsMemory(t *testing.T) {
	for name, s := range coldStores(t) {
		t.Run(name, func(t *testing.T) {
			snap := s.snap
			groups, err := snap.finishedGroups()
			if err != nil {
				t.Fatal(err)
			}
			if len(groups) < 2 {
				t.Fatalf("%d finished mailboxes", len(groups))
			}
			c := makeCold(t, snap, nil, nil, groups)
			if c.tip != snap.tip || c.root != snap.trees.root {
				t.Fatalf("commit %s %s, want %s %s", c.tip, c.root, snap.tip, snap.trees.root)
			}
			cold := map[string]bool{}
			for _, g := range groups {
				cold[g.dir] = true
			}
			checkColdAnswers(t, snap, c, cold)

			// Some mailboxes made warm: gone from every table.
			var back []coldGroup
			for i, g := range groups {
				if i%3 == 1 {
					delete(cold, g.dir)
					back = append(back, g)
				}
			}
			gone := map[string]bool{}
			for _, g := range back {
				gone[g.dir] = true
			}
			c2 := makeCold(t, snap, c, gone, nil)
			checkColdAnswers(t, snap, c2, cold)

			// And cold again: the first file.
			c3 := makeCold(t, snap, c2, nil, back)
			if a, b := coldDump(t, c), coldDump(t, c3); a != b {
				t.Fatalf("made again, the file differs:\n%s\nwant\n%s", b, a)
			}
		})
	}
}

// checkColdAnswers checks c holds what snap holds of the mailboxes in
// folders cold, and nothing of the others.
func checkColdAnswers(t *testing.T, snap *snapshot, c *coldFile, cold map[string]bool) {
	t.Helper()
	n := 0
	for _, p := range snap.listFiles("", true) {
		e, ok, err := c.record(p)
		if err != nil {
			t.Fatal(err)
		}
		if ok != cold[mailboxDirOf(p)] {
			t.Fatalf("record %s in the cold file: %v", p, ok)
		}
		if !ok {
			continue
		}
		n++
		want, err := snap.entryFromBlob(p, snap.files[p])
		if err != nil {
			t.Fatal(err)
		}
		if want.idName {
			want.id = recordName(p)
		}
		if !reflect.DeepEqual(e, want) {
			t.Fatalf("record %s:\n got %+v\nwant %+v", p, e, want)
		}
	}
	for dir := range cold {
		var got []string
		for p, err := range c.paths(dir + "/") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
		if want := snap.listFiles(dir, true); !slices.Equal(got, want) {
			t.Fatalf("folder %s: %q, want %q", dir, got, want)
		}
	}
	checkColdIndexes(t, snap, c, cold)
	checkColdLists(t, snap, c, cold)
	checkColdDays(t, snap, c, cold)
	if n == 0 {
		t.Fatal("no cold record")
	}
}

func checkColdIndexes(t *testing.T, snap *snapshot, c *coldFile, cold map[string]bool) {
	t.Helper()
	for rt := range snap.routes {
		var want []string // the claims of the cold mailboxes
		for _, p := range append([]string{snap.routes[rt]}, snap.routeClaims[rt]...) {
			if cold[mailboxDirOf(p)] {
				want = append(want, p)
			}
		}
		slices.Sort(want)
		var got []string
		for p, err := range c.claims(rt) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("route %+v: claims %q, want %q", rt, got, want)
		}
	}
	for id, p := range snap.runs {
		got, err := c.run(id)
		if err != nil {
			t.Fatal(err)
		}
		if cold[mailboxDirOf(p)] != (got == p) {
			t.Fatalf("run %s: %q, memory says %q", id, got, p)
		}
	}
}

// checkColdLists compares the overview's lists, all and by project, to
// the cold file's, restricted to the cold mailboxes, whole and from the
// cursor of each third entry.
func checkColdLists(t *testing.T, snap *snapshot, c *coldFile, cold map[string]bool) {
	t.Helper()
	o := &snap.ov
	type listed struct {
		k           ovKey
		path, title string
		quarantined bool
		class       runClass
	}
	mbs := func(l *sortedList[*mbEntry]) (out []listed) {
		for e := range descend([]*sortedList[*mbEntry]{l}, nil) {
			if cold[mailboxDirOf(e.path)] {
				_, title, q := mailboxFacts(e.r.val)
				out = append(out, listed{k: e.k, path: e.path, title: title, quarantined: q})
			}
		}
		return out
	}
	runs := func(l *sortedList[*runEntry]) (out []listed) {
		for e := range descend([]*sortedList[*runEntry]{l}, nil) {
			if cold[mailboxDirOf(e.path)] {
				out = append(out, listed{k: e.k, path: e.path, class: o.classes[e.r.class]})
			}
		}
		return out
	}
	fromCold := func(name, project string, after *ovKey) (out []listed) {
		for e, err := range c.list(name, project, after) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, listed{e.k, e.path, e.title, e.quarantined, e.class})
		}
		return out
	}
	check := func(what, name, project string, want []listed) {
		if got := fromCold(name, project, nil); !slices.Equal(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
		}
		for i := 0; i < len(want); i += 3 {
			if got := fromCold(name, project, &want[i].k); !slices.Equal(got, want[i+1:]) {
				t.Fatalf("%s after %+v:\n got %+v\nwant %+v", what, want[i].k, got, want[i+1:])
			}
		}
	}
	check("mailboxes", coldMailboxes, "", mbs(&o.mailboxes))
	check("runs", coldRunsByTime, "", runs(&o.runs))
	for key, p := range o.projects {
		check("mailboxes of "+key, coldMailboxes, key, mbs(&p.mailboxes))
		check("runs of "+key, coldRunsByTime, key, runs(&p.runs))
	}
}

// checkColdDays compares the days table to the runs of the cold mailboxes
// as the overview holds them.
func checkColdDays(t *testing.T, snap *snapshot, c *coldFile, cold map[string]bool) {
	t.Helper()
	want := map[string]dayValue{}
	for p, e := range snap.ov.runByPath {
		if !cold[mailboxDirOf(p)] {
			continue
		}
		k := fmt.Sprintf("%s %d %v", e.proj.key, e.day, snap.ov.classes[e.r.class])
		d := want[k]
		d.runs++
		d.tot.add(e.tot, 1)
		want[k] = d
	}
	got := map[string]dayValue{}
	for d, err := range c.days() {
		if err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%s %d %v", d.project, d.day, d.class)] = d.v
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("days:\n got %v\nwant %v", got, want)
	}
}

// coldDump lists every table of c, entry by entry.
func coldDump(t *testing.T, c *coldFile) string {
	t.Helper()
	var b bytes.Buffer
	for _, name := range c.f.Names() {
		fmt.Fprintf(&b, "table %s\n", name)
		for e, err := range c.f.Table(name).Ascend(nil) {
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%q %q\n", e.Key, e.Value)
		}
	}
	return b.String()
}
