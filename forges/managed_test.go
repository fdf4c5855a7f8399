package forges

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	k := Key("forgejo/alice/demo/issue-7", "plan", "delivery-1")
	if !keyRE.MatchString(k) {
		t.Fatalf("Key = %q, want 12 lowercase hex", k)
	}
	if k != Key("forgejo/alice/demo/issue-7", "plan", "delivery-1") {
		t.Error("Key is not deterministic")
	}
	for _, other := range []string{
		Key("forgejo/alice/demo/issue-8", "plan", "delivery-1"),
		Key("forgejo/alice/demo/issue-7", "session", "delivery-1"),
		Key("forgejo/alice/demo/issue-7", "plan", "delivery-2"),
		Key("forgejo/alice/demo/issue-7plan", "", "delivery-1"),
	} {
		if other == k {
			t.Errorf("Key collides for different inputs: %s", k)
		}
	}
}

func TestMarker(t *testing.T) {
	for _, tc := range []struct {
		key, kind, want string
		ok              bool
	}{
		{"0123456789ab", "acknowledgement", "<!-- agent:key=0123456789ab:kind=acknowledgement -->", true},
		{"0123456789ab", "status_label_restored", "<!-- agent:key=0123456789ab:kind=status_label_restored -->", true},
		{"0123456789AB", "plan", "", false},
		{"0123456789a", "plan", "", false},
		{"0123456789ab", "has space", "", false},
		{"0123456789ab", "", "", false},
		{"0123456789ab", "x-->", "", false},
	} {
		got, err := Marker(tc.key, tc.kind)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Marker(%q, %q) = %q, %v; want %q, ok %v", tc.key, tc.kind, got, err, tc.want, tc.ok)
		}
	}
}

func TestRenderAndParseMarker(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"Plan ✓\n\n", "Plan ✓\n\n<!-- agent:key=0123456789ab:kind=plan -->"},
		{"", "<!-- agent:key=0123456789ab:kind=plan -->"},
		{"a\r\n", "a\n\n<!-- agent:key=0123456789ab:kind=plan -->"},
	} {
		got, err := RenderComment(tc.body, "0123456789ab", "plan")
		if err != nil || got != tc.want {
			t.Errorf("RenderComment(%q) = %q, %v; want %q", tc.body, got, err, tc.want)
		}
		key, kind, ok := ParseMarker(got)
		if !ok || key != "0123456789ab" || kind != "plan" {
			t.Errorf("ParseMarker(%q) = %q, %q, %v", got, key, kind, ok)
		}
	}
	// The last marker wins: a quoted older marker above the bot's own.
	key, kind, ok := ParseMarker("> <!-- agent:key=aaaaaaaaaaaa:kind=old -->\n\n<!-- agent:key=bbbbbbbbbbbb:kind=new -->")
	if !ok || key != "bbbbbbbbbbbb" || kind != "new" {
		t.Errorf("ParseMarker with two markers = %q, %q, %v; want the last", key, kind, ok)
	}
	for _, body := range []string{"", "no marker", "<!-- agent:key=XYZ:kind=plan -->", "<!-- agent:key=0123456789ab:kind= -->"} {
		if _, _, ok := ParseMarker(body); ok {
			t.Errorf("ParseMarker(%q) found a marker", body)
		}
	}
}

// FuzzMarker checks that a rendered comment always parses back to its key and
// kind, whatever the body, and that ParseMarker never panics.
func FuzzMarker(f *testing.F) {
	f.Add("I am on it. Branch `agent/issue-1-add-a-name-on-ai-client-and-resume-from` will follow.", "acknowledgement", "mailbox", "delivery")
	f.Add("<!-- agent:key=0123456789ab:kind=acknowledgement -->", "plan", "", "")
	f.Add("", "session", "x", "y")
	f.Fuzz(func(t *testing.T, body, kind, mailbox, event string) {
		ParseMarker(body)
		key := Key(mailbox, kind, event)
		out, err := RenderComment(body, key, kind)
		if err != nil {
			if kindRE.MatchString(kind) {
				t.Fatalf("RenderComment refused valid kind %q: %v", kind, err)
			}
			return
		}
		k, kd, ok := ParseMarker(out)
		if !ok || k != key || kd != kind {
			t.Fatalf("ParseMarker(RenderComment(%q, %q, %q)) = %q, %q, %v", body, key, kind, k, kd, ok)
		}
		if !strings.HasPrefix(out, strings.TrimRight(body, "\r\n\t ")) {
			t.Fatalf("RenderComment lost body text: %q -> %q", body, out)
		}
	})
}
