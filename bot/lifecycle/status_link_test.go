package lifecycle

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/state"
)

// The status comment links to the mailbox page when run links are made (a
// public URL is set), and to nothing otherwise.
func TestStatusCommentLinksTheMailboxPage(t *testing.T) {
	run := state.Run{ID: "0123456789ab", MailboxID: "forgejo/alice/demo/issue/7", Phase: "analysis", Status: state.RunSucceeded}
	for _, tc := range []struct {
		name, url, want string
	}{
		{"public URL", "https://alfred.example/runs/0123456789ab", "[All runs, tokens and cost](https://alfred.example/mailboxes/forgejo/alice/demo/issue/7)"},
		{"no public URL", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TextSession([]SessionRow{{Run: run, URL: tc.url}}, nil)
			if has := strings.Contains(got, "/mailboxes/"); has != (tc.want != "") || !strings.Contains(got, tc.want) {
				t.Errorf("status comment:\n%s\nwant the line %q", got, tc.want)
			}
		})
	}
}
