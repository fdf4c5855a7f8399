package forges

import (
	"strings"
	"testing"
)

func TestSection(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		ok               bool
	}{
		{"none", "just text", "", false},
		{"lf", "a\n<!-- agent:section:start -->\nx\ny\n<!-- agent:section:end -->\nb", "x\ny", true},
		{"crlf", "a\r\n<!-- agent:section:start -->\r\nx\r\ny\r\n<!-- agent:section:end -->\r\n", "x\ny", true},
		{"empty", "<!-- agent:section:start -->\n<!-- agent:section:end -->", "", true},
		{"unterminated", "a\n<!-- agent:section:start -->\nx\n", "", false},
		{"end before start", "<!-- agent:section:end -->\n<!-- agent:section:start -->\nx", "", false},
		{"orphan start then section", "<!-- agent:section:start -->\nhuman\n<!-- agent:section:start -->\nbot\n<!-- agent:section:end -->", "bot", true},
		{"two sections: first wins", "<!-- agent:section:start -->\none\n<!-- agent:section:end -->\n<!-- agent:section:start -->\ntwo\n<!-- agent:section:end -->", "one", true},
		{"in fence is text", "```\n<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n```\n", "", false},
		{"tilde fence then real", "~~~~md\n<!-- agent:section:start -->\n~~~\nstill code\n~~~~\n<!-- agent:section:start -->\nreal\n<!-- agent:section:end -->", "real", true},
		{"unicode", "é✓\n<!-- agent:section:start -->\n日本語 ✓\n<!-- agent:section:end -->", "日本語 ✓", true},
		{"inline markers", "x <!-- agent:section:start -->mid<!-- agent:section:end --> y", "mid", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Section(tc.body)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Section(%q) = %q, %v; want %q, %v", tc.body, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestReplaceSection(t *testing.T) {
	for _, tc := range []struct {
		name, body, section, want string
	}{
		{"empty body", "", "x", "<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n"},
		{"append lf", "Human text.", "x", "Human text.\n\n<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n"},
		{"append after newline", "Human text.\n", "x", "Human text.\n\n<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n"},
		{"append crlf", "Line 1\r\nLine 2", "a\nb", "Line 1\r\nLine 2\r\n\r\n<!-- agent:section:start -->\r\na\r\nb\r\n<!-- agent:section:end -->\r\n"},
		{"replace keeps outside", "  top ✓\r\n<!-- agent:section:start -->old<!-- agent:section:end -->tail\r\n", "new",
			"  top ✓\r\n<!-- agent:section:start -->\r\nnew\r\n<!-- agent:section:end -->tail\r\n"},
		{"unterminated start stays text", "a\n<!-- agent:section:start -->\nhuman", "x",
			"a\n<!-- agent:section:start -->\nhuman\n\n<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n"},
		{"second section untouched", "<!-- agent:section:start -->\n1\n<!-- agent:section:end -->\n<!-- agent:section:start -->\n2\n<!-- agent:section:end -->", "x",
			"<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n<!-- agent:section:start -->\n2\n<!-- agent:section:end -->"},
		{"section in code block is text", "```\n<!-- agent:section:start -->\n<!-- agent:section:end -->\n```", "x",
			"```\n<!-- agent:section:start -->\n<!-- agent:section:end -->\n```\n\n<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n"},
		{"open fence closed before append", "```go\ncode", "x",
			"```go\ncode\n```\n\n<!-- agent:section:start -->\nx\n<!-- agent:section:end -->\n"},
		{"markers in section defused", "", "a <!-- agent:section:end --> b",
			"<!-- agent:section:start -->\na <!-- agent-section:end --> b\n<!-- agent:section:end -->\n"},
		{"open fence in section closed", "", "```\ncode",
			"<!-- agent:section:start -->\n```\ncode\n```\n<!-- agent:section:end -->\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReplaceSection(tc.body, tc.section)
			if got != tc.want {
				t.Errorf("ReplaceSection(%q, %q) =\n%q\nwant\n%q", tc.body, tc.section, got, tc.want)
			}
			if again := ReplaceSection(got, tc.section); again != got {
				t.Errorf("ReplaceSection is not idempotent: %q then %q", got, again)
			}
			checkOutsideKept(t, tc.body, got)
		})
	}
}

// checkOutsideKept asserts that every byte of before outside its section is in
// after, at the same place relative to the section.
func checkOutsideKept(t *testing.T, before, after string) {
	t.Helper()
	lo, hi, ok := locateSection(before)
	if !ok {
		if !strings.HasPrefix(after, before) {
			t.Errorf("text outside the section changed: %q became %q", before, after)
		}
		return
	}
	if !strings.HasPrefix(after, before[:lo]) || !strings.HasSuffix(after, before[hi:]) {
		t.Errorf("text outside the section changed: %q became %q", before, after)
	}
}

// FuzzSection checks that ReplaceSection never panics, never changes a byte
// outside the section, is idempotent and that Section reads back what was written.
func FuzzSection(f *testing.F) {
	for _, s := range []string{
		"", "text", "a\r\nb", "<!-- agent:section:start -->\nx\n<!-- agent:section:end -->",
		"```\n<!-- agent:section:start -->\n```\n", "<!-- agent:section:start -->", "~~~\n<!-- agent:section:end -->",
		"We want to name an AI client session and resume it later.\n\nRelated: #6 #7\n\n<!-- agent:section:start -->\n## Agent status\n- state: in development\n<!-- agent:section:end -->\n",
	} {
		f.Add(s, "## Agent\n- ✓")
	}
	f.Fuzz(func(t *testing.T, body, section string) {
		got := ReplaceSection(body, section)
		checkOutsideKept(t, body, got)
		s, ok := Section(got)
		if !ok {
			t.Fatalf("no section after ReplaceSection(%q, %q) = %q", body, section, got)
		}
		if want := normalizeSection(section); s != want {
			t.Fatalf("Section(ReplaceSection(%q, %q)) = %q, want %q", body, section, s, want)
		}
		if again := ReplaceSection(got, section); again != got {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
	})
}

func BenchmarkReplaceSection(b *testing.B) {
	human := strings.Repeat("People wrote this line, with `code` and ünïcode ✓.\r\n", 200)
	body := ReplaceSection(human+"```\n<!-- agent:section:start -->\n```\n", "## Agent status\n- state: analysis")
	section := "## Agent status\n- state: development\n- branch: `agent/issue-7-add-a-name`"
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		ReplaceSection(body, section)
	}
}
