package state

// Overview queries (issue 20): paged lists of mailboxes and runs, per-day
// aggregates and the projects that have mailboxes, answered from indexes
// kept in step with every commit (see the second half of this file).
//
// Notes for the views (the names are those of the brief, unchanged):
//   - Order is newest first on the time key (Mailbox.UpdatedAt,
//     Run.CreatedAt), ties broken by ID descending.
//   - Cursors are opaque (URL-safe base64 of "unixnano|id"), keyset: records
//     added after a page was served never shift later pages, nothing is
//     shown twice or skipped. A mailbox rewritten between two pages moves to
//     the top (its UpdatedAt changes): later pages leave it out, shown
//     already or not; the first page shows it again.
//   - limit <= 0 returns no rows and no error. A bad cursor wraps
//     ErrBadCursor (errors.Is): answer 400.
//   - Visible is called at most once per project per call, only for
//     projects that have records.
//   - Tokens and cost are sums over llm sessions; cost is summed in
//     nano-dollars, so it is exact to 1e-9 USD.
//   - Records that cannot be read (Store.Problems) are left out.

import (
	"cmp"
	"container/heap"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrBadCursor is wrapped by the error of a list query whose cursor does not
// parse.
var ErrBadCursor = errors.New("bad cursor")

// MailboxFilter selects mailboxes; zero fields select all.
type MailboxFilter struct {
	Forge, Owner, Project string   // exact match when set
	Statuses              []string // any of these mailbox statuses ("blocked", "waiting_info", ...)
	Quarantined           bool     // only mailboxes with quarantined events
	Title                 string   // case-insensitive substring of the title
	// Visible is the pages' access check, asked once per project per call;
	// nil shows every project.
	Visible func(forge, owner, project string) bool
}

// MailboxRow is one mailbox with what the overview shows beside it.
type MailboxRow struct {
	Mailbox                   Mailbox
	LastRun                   *Run        // newest run, nil when none
	LastSession               *LLMSession // newest llm session of the newest run, nil when none
	Runs                      int
	InputTokens, OutputTokens int64
	CostUSD                   float64
}

// RunFilter selects runs; zero fields select all.
type RunFilter struct {
	Forge, Owner, Project      string
	MailboxID                  string
	Statuses, Phases, Adapters []string // any of
	Visible                    func(forge, owner, project string) bool
}

// DayTotal is one UTC day of runs matching a filter.
type DayTotal struct {
	Day                       string         // "2006-01-02", UTC, of the run's CreatedAt
	Runs                      map[string]int // by run status
	InputTokens, OutputTokens int64
	CostUSD                   float64
}

// ProjectRef names a project that has mailboxes.
type ProjectRef struct{ Forge, Owner, Project string }

func encodeCursor(k ovKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.t, 10) + "|" + k.id))
}

// parseCursor returns the key a cursor names, nil for the first page.
func parseCursor(c string) (*ovKey, error) {
	if c == "" {
		return nil, nil
	}
	bad := fmt.Errorf("cursor %q: %w", c, ErrBadCursor)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, bad
	}
	ts, id, ok := strings.Cut(string(raw), "|")
	if !ok || id == "" {
		return nil, bad
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, bad
	}
	return &ovKey{t: n, id: id}, nil
}

func anyOf[S ~string](set []string, v S) bool {
	if len(set) == 0 {
		return true
	}
	for _, x := range set {
		if x == string(v) {
			return true
		}
	}
	return false
}

// projSel is the projects one call may show: all of them (the global lists
// answer), or those in set.
type projSel struct {
	all  bool
	list []*projIndex
	set  map[*projIndex]bool
}

func (p projSel) has(x *projIndex) bool { return p.all || p.set[x] }

// selectProjects applies the project fields of a filter and Visible, asking
// Visible once per project.
func (o *overview) selectProjects(forge, owner, project string, visible func(forge, owner, project string) bool) projSel {
	if forge == "" && owner == "" && project == "" && visible == nil {
		return projSel{all: true}
	}
	var cands []*projIndex
	if forge != "" && owner != "" && project != "" {
		if p := o.projects[escapeSegment(forge)+"/"+escapeSegment(owner)+"/"+escapeSegment(project)]; p != nil {
			cands = append(cands, p)
		}
	} else {
		for _, p := range o.projects {
			if (forge == "" || p.ref.Forge == forge) && (owner == "" || p.ref.Owner == owner) && (project == "" || p.ref.Project == project) {
				cands = append(cands, p)
			}
		}
	}
	sel := projSel{set: make(map[*projIndex]bool, len(cands))}
	for _, p := range cands {
		if visible == nil || visible(p.ref.Forge, p.ref.Owner, p.ref.Project) {
			sel.list = append(sel.list, p)
			sel.set[p] = true
		}
	}
	sel.all = len(sel.list) == len(o.projects)
	return sel
}

// containsFold reports whether lowerSub, in lower case, is in s, ignoring
// case; ASCII titles are compared without allocating.
func containsFold(s, lowerSub string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.Contains(strings.ToLower(s), lowerSub)
		}
	}
outer:
	for i := 0; i+len(lowerSub) <= len(s); i++ {
		for j := 0; j < len(lowerSub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerSub[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// ListMailboxes returns up to limit rows matching f, most recently updated
// first (UpdatedAt desc, then ID desc), starting after cursor ("" = first
// page); next is "" on the last page. A cursor that does not parse is an
// error wrapping ErrBadCursor.
func (s *Store) ListMailboxes(f MailboxFilter, cursor string, limit int) (rows []MailboxRow, next string, err error) {
	after, err := parseCursor(cursor)
	if err != nil || limit <= 0 {
		return nil, "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := &s.snap.ov
	sel := o.selectProjects(f.Forge, f.Owner, f.Project, f.Visible)
	lists := []*sortedList[*mbEntry]{&o.mailboxes}
	if !sel.all {
		lists = lists[:0]
		for _, p := range sel.list {
			lists = append(lists, &p.mailboxes)
		}
	}
	title := strings.ToLower(f.Title)
	var cold []coldSource
	if anyOf(f.Statuses, MailboxDone) { // a cold mailbox is done
		cold = s.snap.coldLists(coldMailboxes, sel, after)
	}
	var last ovKey
	for e, err := range mergeDesc(descend(lists, after), cold, s.snap.coldMailboxEntry) {
		if err != nil {
			return nil, "", err
		}
		status, t, quarantined := mailboxFacts(e.r.val)
		if !anyOf(f.Statuses, status) || (f.Quarantined && !quarantined) ||
			(title != "" && !containsFold(t, title)) {
			continue
		}
		if len(rows) == limit {
			return rows, encodeCursor(last), nil
		}
		row, err := s.snap.row(e)
		if err != nil {
			return nil, "", err
		}
		rows = append(rows, row)
		last = e.k
	}
	return rows, "", nil
}

// row copies a mailbox and its stats out of the indexes, its newest run
// whole.
func (s *snapshot) row(e *mbEntry) (MailboxRow, error) {
	r := e.r
	if r.hash.IsZero() { // a cold list's entry
		if r = s.rec(e.path); r == nil {
			return MailboxRow{}, fmt.Errorf("read mailbox %s: %w", e.path, ErrNotFound)
		} else if r.err != nil {
			return MailboxRow{}, r.err
		}
	}
	m, err := s.wholeMailbox(e.path, r)
	if err != nil {
		return MailboxRow{}, err
	}
	row := MailboxRow{Mailbox: m}
	st, err := s.statsOf(e.k.id)
	if st == nil {
		return row, err
	}
	row.Runs = st.runs.n
	row.InputTokens, row.OutputTokens, row.CostUSD = st.tot.in, st.tot.out, usd(st.tot.cost)
	if lr, ok := st.runs.last(); ok {
		r, err := s.entryRun(lr)
		if err != nil {
			return row, err
		}
		row.LastRun = &r
		if lr.last != nil {
			ls, err := s.session(lr.last.path, s.rec(lr.last.path))
			if err != nil {
				return row, err
			}
			row.LastSession = &ls
		}
	}
	return row, nil
}

// entryRun returns the whole run of an overview entry.
func (s *snapshot) entryRun(e *runEntry) (Run, error) {
	r := s.rec(e.path)
	switch {
	case r == nil:
		return Run{}, fmt.Errorf("read run %s: %w", e.path, ErrNotFound)
	case r.err != nil:
		return Run{}, r.err
	}
	return s.run(e.path, r)
}

// runLists returns the lists that hold the runs f may select, and whether
// each entry must still be checked against sel.
func (s *snapshot) runLists(f RunFilter, sel projSel) (lists []*sortedList[*runEntry], check bool, err error) {
	o := &s.ov
	switch {
	case f.MailboxID != "":
		st, err := s.statsOf(f.MailboxID)
		if st != nil {
			return []*sortedList[*runEntry]{&st.runs}, !sel.all, err
		}
		return nil, false, err
	case sel.all:
		return []*sortedList[*runEntry]{&o.runs}, false, nil
	}
	for _, p := range sel.list {
		lists = append(lists, &p.runs)
	}
	return lists, false, nil
}

func (f RunFilter) matchRun(c runClass) bool {
	return anyOf(f.Statuses, c.status) && anyOf(f.Phases, c.phase) && anyOf(f.Adapters, c.adapter)
}

// ListRuns returns up to limit runs matching f, newest first (CreatedAt
// desc, then ID desc), with the same cursor rules as ListMailboxes.
func (s *Store) ListRuns(f RunFilter, cursor string, limit int) (runs []Run, next string, err error) {
	after, err := parseCursor(cursor)
	if err != nil || limit <= 0 {
		return nil, "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := &s.snap.ov
	sel := o.selectProjects(f.Forge, f.Owner, f.Project, f.Visible)
	lists, check, err := s.snap.runLists(f, sel)
	if err != nil {
		return nil, "", err
	}
	var cold []coldSource
	if f.MailboxID == "" {
		cold = s.snap.coldLists(coldRunsByTime, sel, after)
	}
	var last ovKey
	for e, err := range mergeDesc(descend(lists, after), cold, s.snap.coldRunEntry) {
		if err != nil {
			return nil, "", err
		}
		if (check && !sel.has(e.proj)) || !f.matchRun(o.classes[e.r.class]) {
			continue
		}
		if len(runs) == limit {
			return runs, encodeCursor(last), nil
		}
		run, err := s.snap.entryRun(e)
		if err != nil {
			return nil, "", err
		}
		runs = append(runs, run)
		last = e.k
	}
	return runs, "", nil
}

// Daily returns one DayTotal per UTC day from since's day to now's (days
// without runs included, zero), oldest first. Tokens and cost come from the
// runs' llm sessions. Without a mailbox in f it adds up day buckets (the
// store's, or those of the selected projects); with one, it reads that
// mailbox's runs.
func (s *Store) Daily(f RunFilter, since, now time.Time) []DayTotal {
	first, last := dayOf(since), dayOf(now)
	if last < first {
		return nil
	}
	out := make([]DayTotal, last-first+1)
	aggs := make([]totals, len(out))
	for i := range out {
		out[i] = DayTotal{Day: time.Unix((first+int64(i))*86400, 0).UTC().Format(time.DateOnly), Runs: map[string]int{}}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := &s.snap.ov
	sel := o.selectProjects(f.Forge, f.Owner, f.Project, f.Visible)
	if f.MailboxID == "" {
		buckets := []dayBuckets{o.days}
		if !sel.all {
			buckets = buckets[:0]
			for _, p := range sel.list {
				buckets = append(buckets, p.days)
			}
		}
		for _, d := range buckets {
			for i := range out {
				for ci, a := range d[first+int64(i)] {
					if c := o.classes[ci]; anyOf(f.Statuses, c.status) && anyOf(f.Phases, c.phase) && anyOf(f.Adapters, c.adapter) {
						if a.runs != 0 {
							out[i].Runs[string(c.status)] += a.runs
						}
						aggs[i].add(a.tot, 1)
					}
				}
			}
		}
	} else {
		lists, check, _ := s.snap.runLists(f, sel) // a cold mailbox that cannot be read has no runs to add
		from, to := ovKey{t: dayNanos(first)}, ovKey{t: dayNanos(last + 1)}
		for e := range ascend(lists, from, to) {
			c := o.classes[e.r.class]
			if (check && !sel.has(e.proj)) || !f.matchRun(c) || e.day < first || e.day > last {
				continue
			}
			i := e.day - first
			out[i].Runs[string(c.status)]++
			aggs[i].add(e.tot, 1)
		}
	}
	for i, a := range aggs {
		out[i].InputTokens, out[i].OutputTokens, out[i].CostUSD = a.in, a.out, usd(a.cost)
	}
	return out
}

// Projects lists the projects that have mailboxes, sorted by forge, owner,
// project.
func (s *Store) Projects() []ProjectRef {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ProjectRef
	for _, p := range s.snap.ov.projects {
		if p.mailboxes.n > 0 || p.cold > 0 {
			out = append(out, p.ref)
		}
	}
	slices.SortFunc(out, func(a, b ProjectRef) int {
		return strings.Compare(a.Forge+"\x00"+a.Owner+"\x00"+a.Project, b.Forge+"\x00"+b.Owner+"\x00"+b.Project)
	})
	return out
}

// Indexes.

// The overview's indexes (issue 20): mailboxes ordered by UpdatedAt, runs by
// CreatedAt, both globally and per project, each mailbox's runs and token
// totals, and per project and UTC day the runs and tokens by run status.
// They are kept in step record by record by snapshot.index and unindex
// (each written record costs a few map operations and an insertion into
// lists of blocks), so a commit never rebuilds them and Open builds them as
// it indexes the tip.

// ovKey orders entries: the time key in Unix nanoseconds, then the ID.
type ovKey struct {
	t  int64
	id string
}

func (a ovKey) less(b ovKey) bool { return a.t < b.t || (a.t == b.t && a.id < b.id) }

type keyed interface {
	comparable
	key() ovKey
}

// blockSize bounds the blocks of a sortedList: an insertion or removal
// moves at most 2*blockSize pointers, whatever the list's length.
const blockSize = 256

// sortedList holds entries in ascending key order, in blocks.
type sortedList[T keyed] struct {
	blocks  [][]T
	n       int
	pending []T // added in bulk (at Open), not yet in order: see build
}

func compareKeys[T keyed](a, b T) int {
	ka, kb := a.key(), b.key()
	if c := cmp.Compare(ka.t, kb.t); c != 0 {
		return c
	}
	return strings.Compare(ka.id, kb.id)
}

// add appends x in bulk, out of order: build must run before the list is
// read or changed otherwise.
func (l *sortedList[T]) add(x T) {
	l.pending = append(l.pending, x)
	l.n++
}

// build sorts what add appended into the list's blocks.
func (l *sortedList[T]) build() {
	if len(l.pending) == 0 {
		return
	}
	all := l.pending
	l.pending = nil
	for _, b := range l.blocks {
		all = append(all, b...)
	}
	slices.SortFunc(all, compareKeys[T])
	l.blocks = l.blocks[:0]
	for len(all) > 0 {
		n := min(len(all), blockSize)
		l.blocks = append(l.blocks, slices.Clone(all[:n]))
		all = all[n:]
	}
}

// blockFor returns the first block whose last key is >= k (len(blocks) when none).
func (l *sortedList[T]) blockFor(k ovKey) int {
	return sort.Search(len(l.blocks), func(i int) bool {
		b := l.blocks[i]
		return !b[len(b)-1].key().less(k)
	})
}

func lowerBound[T keyed](b []T, k ovKey) int {
	return sort.Search(len(b), func(i int) bool { return !b[i].key().less(k) })
}

func (l *sortedList[T]) insert(x T) {
	l.n++
	if len(l.blocks) == 0 {
		l.blocks = [][]T{{x}}
		return
	}
	k := x.key()
	bi := min(l.blockFor(k), len(l.blocks)-1)
	b := l.blocks[bi]
	b = slices.Insert(b, lowerBound(b, k), x)
	if len(b) > 2*blockSize {
		tail := append(make([]T, 0, 2*blockSize), b[blockSize:]...)
		clear(b[blockSize:])
		b = b[:blockSize]
		l.blocks = slices.Insert(l.blocks, bi+1, tail)
	}
	l.blocks[bi] = b
}

func (l *sortedList[T]) remove(x T) bool {
	k := x.key()
	for bi := l.blockFor(k); bi < len(l.blocks); bi++ {
		b := l.blocks[bi]
		i := lowerBound(b, k)
		for ; i < len(b) && b[i].key() == k; i++ {
			if b[i] == x {
				l.n--
				if b = slices.Delete(b, i, i+1); len(b) == 0 {
					l.blocks = slices.Delete(l.blocks, bi, bi+1)
				} else {
					l.blocks[bi] = b
				}
				return true
			}
		}
		if i < len(b) {
			return false
		}
	}
	return false
}

// last returns the entry with the highest key.
func (l *sortedList[T]) last() (T, bool) {
	var zero T
	if len(l.blocks) == 0 {
		return zero, false
	}
	b := l.blocks[len(l.blocks)-1]
	return b[len(b)-1], true
}

// pos is a position in a sortedList; bi out of range means past either end.
type pos struct{ bi, i int }

// below returns the position of the last entry whose key is < k, or of the
// last entry when k is nil.
func (l *sortedList[T]) below(k *ovKey) pos {
	if k == nil {
		if len(l.blocks) == 0 {
			return pos{-1, 0}
		}
		return pos{len(l.blocks) - 1, len(l.blocks[len(l.blocks)-1]) - 1}
	}
	bi := l.blockFor(*k)
	if bi == len(l.blocks) {
		return l.below(nil)
	}
	p := pos{bi, lowerBound(l.blocks[bi], *k) - 1}
	if p.i < 0 {
		p.bi--
		if p.bi >= 0 {
			p.i = len(l.blocks[p.bi]) - 1
		}
	}
	return p
}

// from returns the position of the first entry whose key is >= k.
func (l *sortedList[T]) from(k ovKey) pos {
	bi := l.blockFor(k)
	if bi == len(l.blocks) {
		return pos{bi, 0}
	}
	return pos{bi, lowerBound(l.blocks[bi], k)}
}

func (l *sortedList[T]) at(p pos) (T, bool) {
	var zero T
	if p.bi < 0 || p.bi >= len(l.blocks) {
		return zero, false
	}
	return l.blocks[p.bi][p.i], true
}

func (l *sortedList[T]) prev(p pos) pos {
	if p.i--; p.i < 0 {
		if p.bi--; p.bi >= 0 {
			p.i = len(l.blocks[p.bi]) - 1
		}
	}
	return p
}

func (l *sortedList[T]) next(p pos) pos {
	if p.i++; p.i >= len(l.blocks[p.bi]) {
		p.bi, p.i = p.bi+1, 0
	}
	return p
}

// descend yields the entries of lists whose key is below after (all when
// nil), highest key first, merging the lists.
func descend[T keyed](lists []*sortedList[T], after *ovKey) iter.Seq[T] {
	return func(yield func(T) bool) {
		if len(lists) == 1 {
			l := lists[0]
			for p := l.below(after); ; p = l.prev(p) {
				x, ok := l.at(p)
				if !ok || !yield(x) {
					return
				}
			}
		}
		h := &mergeHeap[T]{}
		for _, l := range lists {
			p := l.below(after)
			if x, ok := l.at(p); ok {
				h.items = append(h.items, mergeItem[T]{l: l, p: p, x: x})
			}
		}
		heap.Init(h)
		for len(h.items) > 0 {
			top := &h.items[0]
			if !yield(top.x) {
				return
			}
			top.p = top.l.prev(top.p)
			if x, ok := top.l.at(top.p); ok {
				top.x = x
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
	}
}

// ascend yields the entries of lists whose key is in [from, to), in no
// particular order across lists.
func ascend[T keyed](lists []*sortedList[T], from, to ovKey) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, l := range lists {
			for p := l.from(from); ; p = l.next(p) {
				x, ok := l.at(p)
				if !ok || !x.key().less(to) {
					break
				}
				if !yield(x) {
					return
				}
			}
		}
	}
}

type mergeItem[T keyed] struct {
	l *sortedList[T]
	p pos
	x T
}

type mergeHeap[T keyed] struct{ items []mergeItem[T] }

func (h *mergeHeap[T]) Len() int           { return len(h.items) }
func (h *mergeHeap[T]) Less(i, j int) bool { return h.items[j].x.key().less(h.items[i].x.key()) }
func (h *mergeHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap[T]) Push(x any)         { h.items = append(h.items, x.(mergeItem[T])) }
func (h *mergeHeap[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// totals are tokens and cost, the cost in nano-dollars so that adding and
// taking away sessions is exact.
type totals struct{ in, out, cost int64 }

func sessionTotals(ls *LLMSession) totals {
	return totals{ls.InputTokens, ls.OutputTokens, int64(math.Round(ls.CostUSD * 1e9))}
}

func (t *totals) add(o totals, sign int64) {
	t.in += sign * o.in
	t.out += sign * o.out
	t.cost += sign * o.cost
}

func usd(nanos int64) float64 { return float64(nanos) / 1e9 }

type mbEntry struct {
	r    *record // its value is a *Mailbox, or a finished one's *mailboxLite
	path string  // the mailbox's record, for its body
	proj *projIndex
	k    ovKey // UpdatedAt, mailbox id
}

func (e *mbEntry) key() ovKey { return e.k }

type runEntry struct {
	r    *runLite // snapshot.entryRun reads the whole run
	path string   // the run's record
	proj *projIndex
	k    ovKey // CreatedAt, run id
	day  int64
	tot  totals       // of the run's llm sessions
	last *sessionLite // its newest llm session
}

func (e *runEntry) key() ovKey { return e.k }

// mbStats are a mailbox's runs and the totals of its llm sessions.
type mbStats struct {
	runs     sortedList[*runEntry]
	sessions int
	tot      totals
}

type dayAgg struct {
	runs int
	tot  totals
}

// runClass is what Daily filters runs by, besides project and mailbox.
type runClass struct {
	status         RunStatus
	phase, adapter string
}

// dayBuckets are runs and totals by UTC day (dayOf), then run class
// number (overview.classes); the aggregates are held in the maps, not
// pointed at (a pointer and an allocation a bucket less).
type dayBuckets map[int64]map[uint32]dayAgg

func (d dayBuckets) add(e *runEntry, runs int, t totals, sign int64) {
	d.addRaw(e.day, e.r.class, runs, t, sign)
}

// addRaw adds runs and totals t of run class c to day dayNum (sign 1), or
// takes them away (-1).
func (d dayBuckets) addRaw(dayNum int64, c uint32, runs int, t totals, sign int64) {
	day := d[dayNum]
	if day == nil {
		day = map[uint32]dayAgg{}
		d[dayNum] = day
	}
	a := day[c]
	a.runs += runs * int(sign)
	a.tot.add(t, sign)
	if a.runs != 0 || a.tot != (totals{}) {
		day[c] = a
		return
	}
	delete(day, c)
	if len(day) == 0 {
		delete(d, dayNum)
	}
}

// projIndex holds one project's entries and day buckets.
type projIndex struct {
	ref       ProjectRef
	key       string // escaped "forge/owner/project"
	mailboxes sortedList[*mbEntry]
	runs      sortedList[*runEntry]
	days      dayBuckets
	cold      int // its mailboxes in the cold file, not warm (coldTier)
}

// bucket adds a run (runs 1) or an llm session of it (runs 0) to the day
// buckets of its project and of the store, or takes it away (sign -1).
func (o *overview) bucket(e *runEntry, runs int, t totals, sign int64) {
	e.proj.days.add(e, runs, t, sign)
	o.days.add(e, runs, t, sign)
}

type overview struct {
	// bulk is set while Open indexes the tip: the lists take their entries
	// unordered and endBulk sorts them once.
	bulk      bool
	mailboxes sortedList[*mbEntry]
	runs      sortedList[*runEntry]
	mbByPath  map[string]*mbEntry
	runByPath map[string]*runEntry
	stats     map[string]*mbStats   // by mailbox id
	projects  map[string]*projIndex // by escaped "forge/owner/project"
	days      dayBuckets            // of every project
	// classes are the run classes met, numbered in classIDs: a run keeps
	// its class's number (runLite.class), not three strings.
	classes  []runClass
	classIDs map[runClass]uint32
}

// classOf returns the number of run class c, numbering it when new.
func (o *overview) classOf(c runClass) uint32 {
	id, ok := o.classIDs[c]
	if !ok {
		id = uint32(len(o.classes))
		o.classes = append(o.classes, c)
		o.classIDs[c] = id
	}
	return id
}

// endBulk orders what was indexed in bulk: the list of all runs (the
// largest) on a second goroutine, the others on this one. The lists share
// nothing; sorting reads only their entries' keys.
func (o *overview) endBulk() {
	o.bulk = false
	var wg sync.WaitGroup
	wg.Go(o.runs.build)
	o.mailboxes.build()
	for _, p := range o.projects {
		p.mailboxes.build()
		p.runs.build()
	}
	for _, st := range o.stats {
		st.runs.build()
	}
	wg.Wait()
}

// insert puts e into l, or appends it in bulk.
func insert[T keyed](o *overview, l *sortedList[T], e T) {
	if o.bulk {
		l.add(e)
	} else {
		l.insert(e)
	}
}

// newOverview returns empty indexes sized for z.
func newOverview(z snapSizes) overview {
	return overview{mailboxes: sortedList[*mbEntry]{pending: make([]*mbEntry, 0, z.mailboxes)},
		runs:     sortedList[*runEntry]{pending: make([]*runEntry, 0, z.runs)},
		mbByPath: make(map[string]*mbEntry, z.mailboxes), runByPath: make(map[string]*runEntry, z.runs),
		stats: make(map[string]*mbStats, z.mailboxes), projects: map[string]*projIndex{}, days: dayBuckets{},
		classIDs: map[runClass]uint32{}}
}

// dayOf numbers t's UTC day from the Unix epoch.
func dayOf(t time.Time) int64 {
	sec := t.Unix()
	d := sec / 86400
	if sec%86400 < 0 {
		d--
	}
	return d
}

func dayNanos(day int64) int64 { return timeKey(time.Unix(day*86400, 0)) }

var minKeyTime, maxKeyTime = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// timeKey is t in Unix nanoseconds, clamped to what an int64 holds.
func timeKey(t time.Time) int64 {
	switch {
	case t.Before(minKeyTime):
		return math.MinInt64
	case t.After(maxKeyTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// project returns the project of a mailbox id, made when missing.
func (o *overview) project(mbID string) *projIndex {
	key := projectKey(mbID)
	if p := o.projects[key]; p != nil {
		return p
	}
	if _, err := ParseMailboxID(mbID); err != nil {
		return nil
	}
	return o.projectByKey(key)
}

// projectByKey returns the project of escaped key "forge/owner/project",
// made when missing (nil when key is not one).
func (o *overview) projectByKey(key string) *projIndex {
	if p := o.projects[key]; p != nil {
		return p
	}
	parts := strings.Split(key, "/")
	if len(parts) != 3 {
		return nil
	}
	var ref ProjectRef
	for i, f := range []*string{&ref.Forge, &ref.Owner, &ref.Project} {
		v, err := url.PathUnescape(parts[i])
		if err != nil || v == "" || escapeSegment(v) != parts[i] {
			return nil
		}
		*f = v
	}
	p := &projIndex{ref: ref, key: key, days: dayBuckets{}}
	o.projects[key] = p
	return p
}

// projectKey is the project of a mailbox id: its escaped
// "forge/owner/project" ("" when it has no such part).
func projectKey(mbID string) string {
	i := strings.LastIndexByte(mbID, '/')
	if i <= 0 {
		return ""
	}
	if i = strings.LastIndexByte(mbID[:i], '/'); i <= 0 {
		return ""
	}
	return mbID[:i]
}

func (o *overview) dropProject(p *projIndex) {
	if p.mailboxes.n == 0 && p.runs.n == 0 && len(p.days) == 0 && p.cold == 0 {
		delete(o.projects, p.key)
	}
}

func (o *overview) stat(mbID string) *mbStats {
	st := o.stats[mbID]
	if st == nil {
		st = &mbStats{}
		o.stats[mbID] = st
	}
	return st
}

func (o *overview) dropStat(mbID string, st *mbStats) {
	if st.runs.n == 0 && st.sessions == 0 {
		delete(o.stats, mbID)
	}
}

// sessionRunPath returns the path of the run an llm session at path belongs to.
func sessionRunPath(path string, ls *sessionLite) (dir, run string) {
	i := strings.LastIndex(path, "/llm_sessions/")
	if i < 0 {
		return "", ""
	}
	return path[:i], runPathIn(path[:i], ls.RunID)
}

// sessionRun is sessionRunPath's run path, found through the runs index
// when it holds it (no string to build).
func (s *snapshot) sessionRun(path string, ls *sessionLite) string {
	i := strings.LastIndex(path, "/llm_sessions/")
	if i < 0 {
		return ""
	}
	esc := escapeSegment(ls.RunID)
	rp := s.runs[esc]
	if j := strings.LastIndex(rp, "/runs/"); j >= 0 && rp[:j] == path[:i] && rp[j+6:] == esc+".json" {
		return rp
	}
	_, rp = sessionRunPath(path, ls)
	return rp
}

// ovIndex adds a readable typed record to the overview's indexes; the
// routing and session indexes already hold it.
// mbID is the mailbox id of path ("" for a path outside mailboxes/).
func (s *snapshot) ovIndex(path, mbID string, r *record) {
	if r.err != nil || r.val == nil || mbID == "" {
		return
	}
	o := &s.ov
	switch v := r.val.(type) {
	case *Mailbox, *mailboxLite:
		p := o.project(mbID)
		if p == nil {
			return
		}
		e := &mbEntry{r: r, path: path, proj: p, k: ovKey{mailboxTime(v), mbID}}
		o.mbByPath[path] = e
		insert(o, &o.mailboxes, e)
		insert(o, &p.mailboxes, e)
	case *runLite:
		s.ovIndexRun(path, mbID, v)
	case *sessionLite:
		t := v.tot
		st := o.stat(mbID)
		st.sessions++
		st.tot.add(t, 1)
		if e := o.runByPath[s.sessionRun(path, v)]; e != nil && e.r.ID == v.RunID {
			e.tot.add(t, 1)
			o.bucket(e, 0, t, 1)
			if e.last == nil || sessionLess(e.last, v) {
				e.last = v
			}
		}
	}
}

// ovIndexRun adds a run to the overview's indexes, with the totals of its
// llm sessions already indexed.
func (s *snapshot) ovIndexRun(path, mbID string, v *runLite) {
	o := &s.ov
	p := o.project(mbID)
	i := strings.LastIndex(path, "/runs/")
	if p == nil || i < 0 {
		return
	}
	e := &runEntry{r: v, path: path, proj: p, k: ovKey{v.t, v.ID}, day: int64(v.day)}
	dir := path[:i] // the mailbox's folder
	for sp := range s.sessionsByRun.of(v.ID) {
		if !strings.HasPrefix(sp, dir) || !strings.HasPrefix(sp[len(dir):], "/llm_sessions/") {
			continue
		}
		if ls, ok := s.files[sp].val.(*sessionLite); ok {
			e.tot.add(ls.tot, 1)
			if e.last == nil || sessionLess(e.last, ls) {
				e.last = ls
			}
		}
	}
	o.runByPath[path] = e
	insert(o, &o.runs, e)
	insert(o, &p.runs, e)
	insert(o, &o.stat(mbID).runs, e)
	o.bucket(e, 1, e.tot, 1)
}

// ovUnindex takes a record out of the overview's indexes, after the
// session indexes let it go.
func (s *snapshot) ovUnindex(path string, r *record) {
	if r.err != nil || r.val == nil {
		return
	}
	o := &s.ov
	mbID, _, ok := mailboxIDOf(path)
	if !ok {
		return
	}
	switch v := r.val.(type) {
	case *Mailbox, *mailboxLite:
		e := o.mbByPath[path]
		if e == nil {
			return
		}
		delete(o.mbByPath, path)
		o.mailboxes.remove(e)
		e.proj.mailboxes.remove(e)
		o.dropProject(e.proj)
	case *runLite:
		e := o.runByPath[path]
		if e == nil {
			return
		}
		delete(o.runByPath, path)
		o.runs.remove(e)
		e.proj.runs.remove(e)
		o.bucket(e, 1, e.tot, -1)
		if st := o.stats[mbID]; st != nil {
			st.runs.remove(e)
			o.dropStat(mbID, st)
		}
		o.dropProject(e.proj)
	case *sessionLite:
		t := v.tot
		if st := o.stats[mbID]; st != nil {
			st.sessions--
			st.tot.add(t, -1)
			o.dropStat(mbID, st)
		}
		dir, rp := sessionRunPath(path, v)
		e := o.runByPath[rp]
		if e == nil || e.r.ID != v.RunID {
			return
		}
		e.tot.add(t, -1)
		o.bucket(e, 0, t, -1)
		if e.last == v {
			e.last = nil
			prefix := dir + "/llm_sessions/"
			for sp := range s.sessionsByRun.of(v.RunID) {
				if ls, ok := s.files[sp].val.(*sessionLite); ok && strings.HasPrefix(sp, prefix) && (e.last == nil || sessionLess(e.last, ls)) {
					e.last = ls
				}
			}
		}
	}
}
