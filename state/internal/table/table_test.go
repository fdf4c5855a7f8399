package table

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// spec is a table a test writes.
type spec struct {
	name    string
	entries []Entry
}

// write writes tables to a file with blocks of blockSize bytes.
func write(t testing.TB, blockSize int, tables ...spec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, blockSize)
	for _, s := range tables {
		if err := w.Begin(s.name); err != nil {
			t.Fatal(err)
		}
		for _, e := range s.entries {
			if err := w.Add(e.Key, e.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustOpen(t testing.TB, data []byte) *File {
	t.Helper()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// numbered returns n entries with keys prefix+"%06d" of i*step.
func numbered(prefix string, n, step int) []Entry {
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = Entry{
			Key:   fmt.Appendf(nil, "%s%06d", prefix, i*step),
			Value: fmt.Appendf(nil, "value of %d", i*step),
		}
	}
	return entries
}

// sample returns tables covering the cases a file must hold: empty, one
// entry, many blocks, entries larger than a block, empty values.
func sample() []spec {
	var long []Entry
	for i := range 5 {
		long = append(long, Entry{
			Key:   append(bytes.Repeat([]byte{'k'}, 300+i*200), byte('a'+i)),
			Value: bytes.Repeat([]byte{byte('0' + i)}, 1000*i),
		})
	}
	return []spec{
		{"empty", nil},
		{"one", []Entry{{Key: []byte("only"), Value: []byte("value")}}},
		{"many", numbered("mailboxes/forgejo/acme/p3/issue/", 3000, 2)},
		{"long", long},
		{"nil values", []Entry{{Key: []byte("a")}, {Key: []byte("ab")}, {Key: []byte("b"), Value: []byte{}}}},
	}
}

// collect returns the entries of seq, copied, and its error.
func collect(seq func(func(Entry, error) bool)) ([]Entry, error) {
	var out []Entry
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	return out, nil
}

func equalEntries(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool {
		return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value)
	})
}

func TestRoundTrip(t *testing.T) {
	tables := sample()
	for _, blockSize := range []int{0, 1, 64, 512, 1 << 16} {
		t.Run(fmt.Sprint(blockSize), func(t *testing.T) {
			f := mustOpen(t, write(t, blockSize, tables...))
			if err := f.Verify(); err != nil {
				t.Fatal(err)
			}
			if err := f.Checksum(); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range tables {
				names = append(names, s.name)
			}
			if got := f.Names(); !slices.Equal(got, names) {
				t.Fatalf("Names() = %q, want %q", got, names)
			}
			if f.Table("absent") != nil {
				t.Error(`Table("absent") not nil`)
			}
			for _, s := range tables {
				tb := f.Table(s.name)
				if tb.Len() != len(s.entries) {
					t.Errorf("%s: Len() = %d, want %d", s.name, tb.Len(), len(s.entries))
				}
				for _, e := range s.entries {
					v, ok, err := tb.Get(e.Key)
					if err != nil || !ok || !bytes.Equal(v, e.Value) {
						t.Fatalf("%s: Get(%.40q) = %.40q, %v, %v; want %.40q", s.name, e.Key, v, ok, err, e.Value)
					}
				}
				got, err := collect(tb.Ascend(nil))
				if err != nil || !equalEntries(got, s.entries) {
					t.Fatalf("%s: Ascend(nil) = %d entries, %v; want %d", s.name, len(got), err, len(s.entries))
				}
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	f := mustOpen(t, write(t, 0))
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
	if names := f.Names(); len(names) != 0 {
		t.Fatalf("Names() = %q", names)
	}
}

func TestGetMisses(t *testing.T) {
	entries := numbered("k", 1000, 2) // k000000, k000002, ...
	f := mustOpen(t, write(t, 128, spec{"t", entries}, spec{"empty", nil}))
	tb := f.Table("t")
	for _, key := range []string{"", "a", "k", "k00000", "k000001", "k000999", "k0009990", "k001997", "k001999", "k002000", "l", "\xff"} {
		v, ok, err := tb.Get([]byte(key))
		if err != nil || ok || v != nil {
			t.Errorf("Get(%q) = %q, %v, %v; want a miss", key, v, ok, err)
		}
		if _, ok, err := f.Table("empty").Get([]byte(key)); ok || err != nil {
			t.Errorf("empty table: Get(%q) = %v, %v", key, ok, err)
		}
	}
	// The value is the caller's.
	v, _, _ := tb.Get([]byte("k000010"))
	v[0] = 'X'
	if v2, _, _ := tb.Get([]byte("k000010")); string(v2) != "value of 10" {
		t.Errorf("Get after modifying a value = %q", v2)
	}
}

func TestAscend(t *testing.T) {
	entries := numbered("k", 500, 2)
	f := mustOpen(t, write(t, 100, spec{"t", entries}))
	tb := f.Table("t")
	from := func(key string) []Entry { // the expected result
		i, _ := slices.BinarySearchFunc(entries, []byte(key), func(e Entry, k []byte) int { return bytes.Compare(e.Key, k) })
		return entries[i:]
	}
	for _, key := range []string{"", "a", "k", "k000000", "k000001", "k000500", "k000501", "k000998", "k000999", "l"} {
		got, err := collect(tb.Ascend([]byte(key)))
		if want := from(key); err != nil || !equalEntries(got, want) {
			t.Errorf("Ascend(%q) = %d entries, %v; want %d", key, len(got), err, len(want))
		}
	}
	n := 0
	for e, err := range tb.Ascend([]byte("k000100")) {
		if err != nil || string(e.Key) != fmt.Sprintf("k%06d", 100+2*n) {
			t.Fatalf("entry %d = %q, %v", n, e.Key, err)
		}
		if n++; n == 3 {
			break
		}
	}
	// Appending to a yielded slice must not touch the iteration's buffers.
	var keys []string
	for e := range tb.Ascend([]byte("k000990")) {
		_ = append(e.Key, "garbage"...)
		_ = append(e.Value, "garbage"...)
		keys = append(keys, string(e.Key))
	}
	if want := []string{"k000990", "k000992", "k000994", "k000996", "k000998"}; !slices.Equal(keys, want) {
		t.Errorf("keys after appends = %q, want %q", keys, want)
	}
}

func TestPrefix(t *testing.T) {
	var entries []Entry
	for _, k := range []string{"a", "a/1", "a/2", "a/2/x", "a0", "b/1", "b/2", "c"} {
		entries = append(entries, Entry{Key: []byte(k), Value: []byte("v" + k)})
	}
	for _, blockSize := range []int{1, 10, 4096} {
		tb := mustOpen(t, write(t, blockSize, spec{"t", entries})).Table("t")
		tests := []struct {
			prefix string
			want   []string
		}{
			{"", []string{"a", "a/1", "a/2", "a/2/x", "a0", "b/1", "b/2", "c"}},
			{"a", []string{"a", "a/1", "a/2", "a/2/x", "a0"}},
			{"a/", []string{"a/1", "a/2", "a/2/x"}},
			{"a/2", []string{"a/2", "a/2/x"}},
			{"b", []string{"b/1", "b/2"}},
			{"c", []string{"c"}},
			{"c/", nil},
			{"0", nil},
			{"d", nil},
		}
		for _, tt := range tests {
			got, err := collect(tb.Prefix([]byte(tt.prefix)))
			var keys []string
			for _, e := range got {
				keys = append(keys, string(e.Key))
				if string(e.Value) != "v"+string(e.Key) {
					t.Errorf("Prefix(%q): value of %q = %q", tt.prefix, e.Key, e.Value)
				}
			}
			if err != nil || !slices.Equal(keys, tt.want) {
				t.Errorf("block size %d: Prefix(%q) = %q, %v; want %q", blockSize, tt.prefix, keys, err, tt.want)
			}
		}
	}
}

func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 64)
	if err := w.Add([]byte("a"), nil); err == nil {
		t.Error("Add before Begin succeeded")
	}
	for _, name := range []string{"", strings.Repeat("n", 256)} {
		if err := w.Begin(name); err == nil {
			t.Errorf("Begin(%.10q) succeeded", name)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Begin(strings.Repeat("n", 255)))
	must(w.Begin("t"))
	must(w.Add([]byte("b"), []byte("1")))
	for _, key := range []string{"a", "b", ""} {
		if err := w.Add([]byte(key), nil); err == nil {
			t.Errorf("Add(%q) after \"b\" succeeded", key)
		}
	}
	must(w.Add([]byte("ba"), []byte("2"))) // the rejected Adds left the writer usable
	if err := w.Begin("t"); err == nil {
		t.Error("Begin of a duplicate name succeeded")
	}
	must(w.Begin("u"))
	must(w.Add([]byte("a"), []byte("3"))) // a new table starts a new order
	must(w.Close())
	for name, err := range map[string]error{"Begin": w.Begin("v"), "Add": w.Add([]byte("z"), nil), "Close": w.Close()} {
		if err == nil {
			t.Errorf("%s after Close succeeded", name)
		}
	}
	f := mustOpen(t, buf.Bytes())
	if got := f.Names(); !slices.Equal(got, []string{strings.Repeat("n", 255), "t", "u"}) {
		t.Errorf("Names() = %.20q", got)
	}
	got, err := collect(f.Table("t").Ascend(nil))
	if want := []Entry{{[]byte("b"), []byte("1")}, {[]byte("ba"), []byte("2")}}; err != nil || !equalEntries(got, want) {
		t.Errorf("t = %q, %v", got, err)
	}
}

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

var errWrite = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriterWriteError(t *testing.T) {
	w := NewWriter(&failWriter{n: 100}, 64)
	var err error
	if err = w.Begin("t"); err != nil {
		t.Fatal(err)
	}
	for _, e := range numbered("k", 100, 1) {
		if err = w.Add(e.Key, e.Value); err != nil {
			break
		}
	}
	if !errors.Is(err, errWrite) {
		t.Fatalf("Add error = %v, want %v", err, errWrite)
	}
	if err := w.Close(); !errors.Is(err, errWrite) {
		t.Fatalf("Close error = %v, want %v", err, errWrite)
	}
}

func TestConcurrentReads(t *testing.T) {
	entries := numbered("k", 2000, 1)
	tb := mustOpen(t, write(t, 256, spec{"t", entries})).Table("t")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(entries); i += 7 {
				v, ok, err := tb.Get(entries[i].Key)
				if err != nil || !ok || !bytes.Equal(v, entries[i].Value) {
					t.Errorf("Get(%q) = %q, %v, %v", entries[i].Key, v, ok, err)
					return
				}
			}
			if got, err := collect(tb.Ascend(entries[g*100].Key)); err != nil || !equalEntries(got, entries[g*100:]) {
				t.Errorf("Ascend: %d entries, %v", len(got), err)
			}
		})
	}
	wg.Wait()
}
