package state

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fastSeeds are records as the store writes them and variants that the fast
// decoder must decode exactly like encoding/json, or leave to it.
func fastSeeds(t testing.TB) []string {
	t0 := time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC)
	m := testMailbox(7)
	m.FormatVersion, m.ID, m.UpdatedAt = FormatVersion, m.Key().ID(), t0
	m.Title = "Fix <b>\"quotes\"</b> & é ☃ \U0001F600\n\ttab"
	m.Quarantined = []QuarantinedEvent{{Delivery: "d1", Type: "push", Path: "events/a.json", Error: "boom", At: t0}}
	m.Labels = []string{}
	m.PlannedAt, m.MergeRequestAt, m.StatusSince = t0, t0.Add(time.Hour), t0.Add(90*time.Minute)
	m.End = &MailboxEnd{How: EndMerged, By: "alice", At: t0.Add(2 * time.Hour)}
	r := Run{FormatVersion: 1, ID: "r1", MailboxID: m.ID, Status: RunSucceeded, CreatedAt: t0, StartedAt: t0,
		Log: "line 1\nline 2 \x01 \u2028", Gateway: &RunGateway{Requests: 3, Refused: []string{"x"}}}
	ls := LLMSession{FormatVersion: 1, ID: "s1", RunID: "r1", MailboxID: m.ID, AdapterID: "codex", CostUSD: 0.042,
		InputTokens: -5, SessionName: ptr(""), NativeSessionID: ptr("n-1"), CreatedAt: t0}
	var out []string
	for _, v := range []any{&m, &r, &ls, map[string]any{"format_version": 1, "x": []any{1.5e3, true, nil, "s"}}} {
		raw, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(raw))
		raw, _ = json.Marshal(v)
		out = append(out, string(raw))
	}
	return append(out,
		`{"format_version": 2}`, `{"Format_Version": 2}`, `{"format_verſion": 2}`, `{"id": null, "labels": null}`,
		`{"iid": 1.0}`, `{"iid": 01}`, `{"cost_usd": 1e400}`, `{"cost_usd": -0.0}`, `{"title": "\ud83d\ude00 \u00e9"}`,
		`{"title": "\ud83d"}`, `{"title": "a\u0000b"}`, `{"title": "`+"\xff"+`"}`, `{"created_at": null}`,
		`{"created_at": "2026-13-01T00:00:00Z"}`, `{"session_name": null}`, `{"labels": ["a", "b",]}`, `{} `,
		` {"a": {"b": [1, {"c": null}]}}`, `{"a": 1} x`, `[1, 2]`, `null`, `{"a": tru}`, `{"id": "x", "id": "y"}`,
		`{"gateway": {"requests": 1}, "gateway": {"input_tokens": 2}}`, `{"quarantined": [{"type": "a"}]}`,
		`{"labels": ["é", "`+strings.Repeat("x", 80)+`"]}`, `{"iid": 9223372036854775808}`, `{"resumed": 1}`,
	)
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		checkFastDecode(t, []byte(raw))
	})
}

// TestFastDecode runs the fuzz seeds and checks that the store's own records
// take the fast path.
func TestFastDecode(t *testing.T) {
	for _, s := range fastSeeds(t) {
		checkFastDecode(t, []byte(s))
	}
	for i, kind := range []string{"mailbox", "mailbox", "run", "run", "llm_session", "llm_session", "", ""} {
		if _, _, ok := decodeFastRecord(kind, []byte(fastSeeds(t)[i]), newInterner()); !ok {
			t.Errorf("seed %d (%s) missed the fast path:\n%s", i, kind, fastSeeds(t)[i])
		}
	}
}

// checkFastDecode: whatever the fast decoder accepts, encoding/json decodes
// to the same value and format version.
func checkFastDecode(t *testing.T, raw []byte) {
	t.Helper()
	for _, kind := range []string{"mailbox", "run", "llm_session", ""} {
		fast, ffv, ok := decodeFastRecord(kind, raw, newInterner())
		if !ok {
			continue
		}
		slow, sfv, err := decodeSlow(kind, raw)
		if err != nil {
			t.Fatalf("%s: fast decoder accepted %q, encoding/json: %v", kind, raw, err)
		}
		if ffv != sfv || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: %q decodes to\n%#v (format %d) fast,\n%#v (format %d) with encoding/json", kind, raw, fast, ffv, slow, sfv)
		}
	}
}

// TestFieldTables: each typed record's fast decoder knows every JSON key of
// its struct, in the struct's order (the order encoding/json writes).
func TestFieldTables(t *testing.T) {
	check := func(typ reflect.Type, names []string) {
		var want []string
		for f := range typ.Fields() {
			if tag := strings.Split(f.Tag.Get("json"), ",")[0]; tag != "" && tag != "-" {
				want = append(want, tag)
			}
		}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%s: fast decoder fields %v, want %v", typ.Name(), names, want)
		}
	}
	check(reflect.TypeFor[Mailbox](), mailboxFields.names())
	check(reflect.TypeFor[Run](), runFields.names())
	check(reflect.TypeFor[LLMSession](), sessionFields.names())
}

func (t fieldTable[T]) names() []string {
	var out []string
	for _, f := range t {
		out = append(out, f.name)
	}
	return out
}
