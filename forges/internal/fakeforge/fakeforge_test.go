package fakeforge

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"testing"
	"testing/fstest"
)

func TestRefChanges(t *testing.T) {
	before := map[string]string{"main": "a", "gone": "b", "same": "c", "moved": "d"}
	after := map[string]string{"main": "a", "same": "c", "moved": "e", "new": "f"}
	got := RefChanges(before, after)
	want := []RefChange{{"moved", "d", "e"}, {"new", ZeroSHA, "f"}, {"gone", "b", ZeroSHA}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RefChanges = %+v, want %+v", got, want)
	}
	if !got[1].Created() || got[1].Deleted() || !got[2].Deleted() || got[0].Created() || got[0].Deleted() {
		t.Fatalf("Created/Deleted wrong for %+v", got)
	}
}

type delivery struct {
	N      int
	Status int
}

func TestSenderDeliversInOrder(t *testing.T) {
	var s Sender[delivery]
	if d := (*Pending[delivery])(nil).Wait(); d != (delivery{}) {
		t.Fatalf("nil Wait = %+v", d)
	}
	var ps []*Pending[delivery]
	for i := range 20 {
		ps = append(ps, s.Queue(delivery{N: i}, func(d delivery) delivery { d.Status = 200 + d.N; return d }))
	}
	if d := ps[3].Wait(); d != (delivery{3, 203}) {
		t.Fatalf("Wait = %+v", d)
	}
	s.Flush()
	ds := s.Deliveries()
	if len(ds) != 20 {
		t.Fatalf("%d deliveries, want 20", len(ds))
	}
	for i, d := range ds {
		if d != (delivery{i, 200 + i}) {
			t.Fatalf("delivery %d = %+v", i, d)
		}
	}
}

func TestPost(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	status, err := Post(srv.Client(), srv.URL, http.Header{"X-Event": {"push"}}, []byte("{}"))
	if err != nil || status != http.StatusAccepted || got.Get("X-Event") != "push" || got.Get("Content-Type") != "application/json" {
		t.Fatalf("Post = %d, %v; headers %v", status, err, got)
	}
	srv.Close()
	if status, err := Post(srv.Client(), srv.URL, nil, nil); status != 0 || err == nil {
		t.Fatalf("Post to a closed server = %d, %v; want 0 and an error", status, err)
	}
}

func TestNewUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if a, b := NewUUID(), NewUUID(); !re.MatchString(a) || a == b {
		t.Fatalf("NewUUID = %q, %q", a, b)
	}
}

func TestRecorded(t *testing.T) {
	fsys := fstest.MapFS{"recordings/a.json": {Data: []byte(`{"k": "v"}`)}}
	if o := Recorded(fsys, "pkg", "a.json"); o["k"] != "v" {
		t.Fatalf("Recorded = %v", o)
	}
	defer func() {
		if r := recover(); r == nil || !regexp.MustCompile(`^pkg: recording b\.json: `).MatchString(r.(string)) {
			t.Fatalf("Recorded of a missing file panicked with %v", r)
		}
	}()
	Recorded(fsys, "pkg", "b.json")
}
