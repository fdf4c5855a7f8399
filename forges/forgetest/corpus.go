package forgetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

var update = flag.Bool("update", false, "rewrite the golden files of the webhook corpus (testdata/<forge>/)")

// The file scheme of a webhook corpus (testdata/<forge>/, see testdata/README.md):
// every NAME.json is a payload, sent with the headers of NAME.headers.json (a
// JSON object of header names to values: the event name at least); the
// normalized event of a payload the parser handles is NAME.golden.json; and
// outcomes.golden.txt lists every payload with its outcome.
const (
	headersSuffix = ".headers.json"
	goldenSuffix  = ".golden.json"
	// OutcomesFile is the list of every payload of a corpus with its outcome.
	OutcomesFile = "outcomes.golden.txt"
)

// Delivery is one webhook delivery of a corpus.
type Delivery struct {
	// Path is the payload's slash-separated path inside the corpus folder.
	Path string
	// Header is what its NAME.headers.json says.
	Header http.Header
	Body   []byte
}

// LoadCorpus reads every delivery under dir (see the file scheme above), in
// path order. A payload without its headers file fails t.
func LoadCorpus(t testing.TB, dir string) []Delivery {
	t.Helper()
	var out []Delivery
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isPayload(path) {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(strings.TrimSuffix(path, ".json") + headersSuffix)
		if err != nil {
			return fmt.Errorf("payload without its headers: %w", err)
		}
		var hm map[string]string
		if err := json.Unmarshal(raw, &hm); err != nil {
			return fmt.Errorf("%s%s: %w", strings.TrimSuffix(path, ".json"), headersSuffix, err)
		}
		h := http.Header{}
		for k, v := range hm {
			h.Set(k, v)
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, Delivery{Path: filepath.ToSlash(rel), Header: h, Body: body})
		return nil
	})
	if err != nil {
		t.Fatalf("corpus %s: %v", dir, err)
	}
	if len(out) == 0 {
		t.Fatalf("corpus %s: no payloads", dir)
	}
	return out
}

func isPayload(path string) bool {
	return strings.HasSuffix(path, ".json") && !strings.HasSuffix(path, headersSuffix) && !strings.HasSuffix(path, goldenSuffix)
}

// Sweep feeds every delivery of one forge's corpus through the forge's Hooks
// and through the shared webhook handler (forges.NewWebhookHandler) with a
// valid signature or token.
type Sweep struct {
	// Dir is the corpus folder, e.g. ../../testdata/github.
	Dir string
	// Hooks is the forge's parser.
	Hooks forges.Hooks
	// Sign makes h verify for body against secret (sets the signature or the
	// token header). It may keep a recorded signature that already does.
	Sign func(h http.Header, body []byte, secret string)
	// DeliveryHeader names the delivery id header. A delivery whose headers
	// file has none gets a fixed UUID made from its path, so goldens are stable.
	DeliveryHeader string
	// Malformed lists the payloads Parse must refuse (ErrMalformed, answered
	// 400), each with why. Any other refused payload fails the sweep.
	Malformed map[string]string
	// Check, when set, checks forge-specific invariants of each normalized event.
	Check func(t *testing.T, ev *forges.Event)
	// Name, when set, is the forge's row in the counts table of the README
	// beside the corpus folder (testdata/README.md), which must match the sweep.
	Name string
}

// Counts are a sweep's outcomes.
type Counts struct {
	Files, Normalized, Ignored, Malformed int
	// Types counts the normalized events by type.
	Types map[forges.EventType]int
}

const sweepSecret = "corpus-s3cret"

// sweepForge is the forge name the sweep's handler gives the events.
const sweepForge = "corpus"

// Run sweeps the corpus, one subtest per payload: no panic and no 5xx; a
// normalized event equal to its golden file and handed to the sink as parsed
// (with the forge's name); an ignored one answered 200 with its reason; a
// malformed one only where Malformed says so. The outcomes file must list
// exactly what came out. With -update the golden files are rewritten and the
// stale ones removed. It logs and returns the counts.
func (s Sweep) Run(t *testing.T) Counts {
	t.Helper()
	sw := newSweeper(s)
	for _, d := range LoadCorpus(t, s.Dir) {
		sw.counts.Files++
		t.Run(d.Path, func(t *testing.T) { sw.deliver(t, d) })
	}
	checkOutcomes(t, s.Dir, sw.outcomes)
	checkStaleGoldens(t, s.Dir, sw.goldens)
	logCounts(t, s.Dir, sw.counts)
	if s.Name != "" && !t.Failed() {
		checkCountsRow(t, s.Dir, s.Name, sw.counts)
	}
	return sw.counts
}

// sweeper is one Run of a Sweep: the webhook handler under test and what the
// deliveries came to so far.
type sweeper struct {
	Sweep
	handler  http.Handler
	sunk     []*forges.Event // what the handler gave the sink for the current delivery
	counts   Counts
	outcomes []string        // a line of the outcomes file per delivery
	goldens  map[string]bool // golden files the sweep wrote or compared
}

// newSweeper returns a sweeper whose handler verifies with sweepSecret (and
// another secret) and hands events to its sink.
func newSweeper(s Sweep) *sweeper {
	sw := &sweeper{Sweep: s, counts: Counts{Types: map[forges.EventType]int{}}, goldens: map[string]bool{}}
	sink := func(_ context.Context, ev *forges.Event) error { sw.sunk = append(sw.sunk, ev); return nil }
	sw.handler = forges.NewWebhookHandler(sweepForge, s.Hooks, []string{"old-secret", sweepSecret}, sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return sw
}

// deliver signs d, sends it through Parse and through the handler, and
// checks what came of it: no panic, no 5xx, and the checks of its outcome.
func (sw *sweeper) deliver(t *testing.T, d Delivery) {
	h := d.Header.Clone()
	if h.Get(sw.DeliveryHeader) == "" {
		h.Set(sw.DeliveryHeader, pathUUID(d.Path))
	}
	sw.Sign(h, d.Body, sweepSecret)
	if err := sw.Hooks.Verify(h, d.Body, []string{sweepSecret}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	ev, err := parse(sw.Hooks, h, d.Body)
	sw.sunk = nil
	status, answer := serve(t, sw.handler, h, d.Body)
	if status >= 500 {
		t.Fatalf("handler answered %d: %s", status, answer)
	}
	why, wantMalformed := sw.Malformed[d.Path]
	switch {
	case err != nil:
		sw.checkMalformed(t, d.Path, err, status, answer)
		return
	case wantMalformed:
		t.Errorf("Parse accepted it (%s), but the sweep lists it as malformed: %s", ev.Type, why)
	}
	if ev == nil {
		t.Fatal("Parse returned neither an event nor an error")
	}
	if ev.Type == forges.EventIgnored {
		sw.checkIgnored(t, d.Path, ev, status, answer)
		return
	}
	sw.checkNormalized(t, d.Path, ev, status, answer)
}

// checkMalformed counts a payload Parse refused and checks that the error
// wraps ErrMalformed, that Malformed lists it and that the handler answered
// 400.
func (sw *sweeper) checkMalformed(t *testing.T, path string, err error, status int, answer string) {
	sw.counts.Malformed++
	sw.outcomes = append(sw.outcomes, path+": malformed: "+oneLine(err.Error()))
	if !errors.Is(err, forges.ErrMalformed) {
		t.Errorf("Parse error does not wrap ErrMalformed: %v", err)
	}
	if _, listed := sw.Malformed[path]; !listed {
		t.Errorf("Parse refused a real payload: %v", err)
	}
	if status != http.StatusBadRequest {
		t.Errorf("handler answered %d (%s), want 400", status, answer)
	}
}

// checkIgnored counts an ignored event and checks that it has a reason, that
// the handler answered 200 with it and that the sink did not get it.
func (sw *sweeper) checkIgnored(t *testing.T, path string, ev *forges.Event, status int, answer string) {
	sw.counts.Ignored++
	sw.outcomes = append(sw.outcomes, path+": ignored: "+oneLine(ev.Reason))
	if ev.Reason == "" {
		t.Error("ignored without a reason")
	}
	// The handler cuts a long answer short.
	if want := "ignored: " + oneLine(ev.Reason); status != http.StatusOK || !strings.HasPrefix(answer, "ignored: ") || !strings.HasPrefix(want, answer) {
		t.Errorf("handler answered %d %q, want 200 %q", status, answer, want)
	}
	if len(sw.sunk) != 0 {
		t.Errorf("an ignored delivery reached the sink: %+v", sw.sunk)
	}
}

// checkNormalized counts a normalized event, checks it (see checkEvent) and
// that the handler answered 202 and gave it to the sink named after the
// forge, and compares it with its golden file.
func (sw *sweeper) checkNormalized(t *testing.T, path string, ev *forges.Event, status int, answer string) {
	sw.counts.Normalized++
	sw.counts.Types[ev.Type]++
	sw.outcomes = append(sw.outcomes, path+": "+string(ev.Type))
	golden := filepath.Join(sw.Dir, filepath.FromSlash(strings.TrimSuffix(path, ".json")+goldenSuffix))
	sw.goldens[golden] = true
	checkEvent(t, ev)
	if sw.Check != nil {
		sw.Check(t, ev)
	}
	if status != http.StatusAccepted {
		t.Errorf("handler answered %d (%s), want 202", status, answer)
	}
	want := *ev
	want.Target.Project.Forge = sweepForge
	if len(sw.sunk) != 1 || !reflect.DeepEqual(sw.sunk[0], &want) {
		t.Errorf("the sink got %+v, want the parsed event named %q", sw.sunk, sweepForge)
	}
	compareGolden(t, golden, ev)
}

// checkEvent checks what every normalized event has: no reason, a delivery
// id, a project with an owner and a name but no forge, and a target with
// both a kind and a number or neither.
func checkEvent(t *testing.T, ev *forges.Event) {
	if ev.Reason != "" {
		t.Errorf("%s with a reason %q", ev.Type, ev.Reason)
	}
	if ev.DeliveryID == "" {
		t.Error("no delivery id")
	}
	p := ev.Target.Project
	if p.Owner == "" || p.Name == "" || p.Forge != "" {
		t.Errorf("%s: project %+v, want an owner and a name and no forge", ev.Type, p)
	}
	if (ev.Target.Kind == "") != (ev.Target.Number == 0) {
		t.Errorf("%s: target %+v", ev.Type, ev.Target)
	}
}

// logCounts logs a sweep's counts, by outcome and by event type.
func logCounts(t *testing.T, dir string, c Counts) {
	t.Helper()
	var byType []string
	for _, ty := range slices.Sorted(maps.Keys(c.Types)) {
		byType = append(byType, fmt.Sprintf("%s %d", ty, c.Types[ty]))
	}
	t.Logf("corpus %s: %d files: %d normalized, %d ignored, %d malformed", dir, c.Files, c.Normalized, c.Ignored, c.Malformed)
	t.Logf("normalized by type: %s", strings.Join(byType, ", "))
}

// checkCountsRow checks the forge's row of the counts table in the README
// beside the corpus folder.
func checkCountsRow(t *testing.T, dir, name string, c Counts) {
	t.Helper()
	readme := filepath.Join(filepath.Dir(filepath.Clean(dir)), "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Errorf("counts table: %v", err)
		return
	}
	row := fmt.Sprintf("| %s | %d | %d | %d | %d |", name, c.Files, c.Normalized, c.Ignored, c.Malformed)
	if !slices.Contains(strings.Split(string(b), "\n"), row) {
		t.Errorf("%s: the counts table lacks the row %q (forge | files | normalized | ignored | malformed)", readme, row)
	}
}

// parse calls Parse, turning a panic into an error of the test.
func parse(hooks forges.Hooks, h http.Header, body []byte) (ev *forges.Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, fmt.Errorf("Parse panicked: %v", r)
		}
	}()
	return hooks.Parse(h, body)
}

func serve(t *testing.T, handler http.Handler, h http.Header, body []byte) (status int, answer string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("the handler panicked: %v", r)
		}
	}()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/webhooks/"+sweepForge, bytes.NewReader(body))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func compareGolden(t *testing.T, path string, ev *forges.Event) {
	t.Helper()
	got, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden file (run with -update to write it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the normalized event differs from %s (run with -update to accept it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func checkOutcomes(t *testing.T, dir string, outcomes []string) {
	t.Helper()
	sort.Strings(outcomes)
	got := "# Every payload of this corpus and what the forge's parser makes of it: the normalized\n" +
		"# event type, \"ignored: <reason>\" or \"malformed: <error>\". Written by the corpus sweep\n" +
		"# (go test ./forges/<forge> -run TestCorpus -update); do not edit.\n" +
		strings.Join(outcomes, "\n") + "\n"
	path := filepath.Join(dir, OutcomesFile)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("no outcomes file (run with -update to write it): %v", err)
		return
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for _, l := range gl {
			if !slices.Contains(wl, l) {
				t.Errorf("%s lacks: %s", path, l)
			}
		}
		for _, l := range wl {
			if !slices.Contains(gl, l) {
				t.Errorf("%s has, no longer true: %s", path, l)
			}
		}
		t.Error("run with -update to rewrite it")
	}
}

// checkStaleGoldens fails on a golden file of no normalized payload (with
// -update, removes it).
func checkStaleGoldens(t *testing.T, dir string, used map[string]bool) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, goldenSuffix) || used[path] {
			return err
		}
		if *update {
			return os.Remove(path)
		}
		t.Errorf("%s: golden file of no normalized payload (run with -update to remove it)", path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pathUUID is a fixed delivery id in the shape of a UUID, made from path.
func pathUUID(path string) string {
	s := sha256.Sum256([]byte(path))
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
