package forges

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Managed comments end with a marker that names them:
//
//	<!-- agent:key=<12 lowercase hex>:kind=<kind> -->
//
// The key is derived from the mailbox, the kind and the triggering event (see
// Key), so a redelivered webhook finds the comment it already posted and edits
// it in place instead of posting twice. A kind is lowercase letters, digits,
// '_' and '-'.

var (
	markerRE = regexp.MustCompile(`<!-- agent:key=([0-9a-f]{12}):kind=([a-z0-9_-]+) -->`)
	keyRE    = regexp.MustCompile(`^[0-9a-f]{12}$`)
	kindRE   = regexp.MustCompile(`^[a-z0-9_-]+$`)
)

// Key derives the 12-hex key of a managed comment from the mailbox id, the
// comment kind and the triggering event (a delivery id, a run id, or "" for
// comments that exist once per mailbox such as the "session" status comment).
func Key(mailboxID, kind, event string) string {
	sum := sha256.Sum256([]byte(mailboxID + "\x00" + kind + "\x00" + event))
	return hex.EncodeToString(sum[:])[:12]
}

// Marker renders the marker of a managed comment. It returns an error when key
// is not 12 lowercase hex digits or kind has characters outside [a-z0-9_-].
func Marker(key, kind string) (string, error) {
	if !keyRE.MatchString(key) {
		return "", fmt.Errorf("marker key %q: want 12 lowercase hex digits", key)
	}
	if !kindRE.MatchString(kind) {
		return "", fmt.Errorf("marker kind %q: want [a-z0-9_-]+", kind)
	}
	return "<!-- agent:key=" + key + ":kind=" + kind + " -->", nil
}

// RenderComment appends the marker to body, after one blank line.
func RenderComment(body, key, kind string) (string, error) {
	m, err := Marker(key, kind)
	if err != nil {
		return "", err
	}
	body = strings.TrimRight(body, "\r\n\t ")
	if body == "" {
		return m, nil
	}
	return body + "\n\n" + m, nil
}

// ParseMarker returns the key and kind of the last marker in body.
func ParseMarker(body string) (key, kind string, ok bool) {
	all := markerRE.FindAllStringSubmatch(body, -1)
	if len(all) == 0 {
		return "", "", false
	}
	last := all[len(all)-1]
	return last[1], last[2], true
}

// EnsureComment makes sure the thread of t holds one comment of the bot with
// body and the marker of key and kind. It creates the comment when none carries
// key, edits the bot's comment that does when its text differs, and does
// nothing (changed false) when the text is the same, ignoring CRLF versus LF and
// surrounding blank space. Comments by other users that quote the marker are
// never touched. It returns the comment as it now stands.
func EnsureComment(ctx context.Context, f Forge, t Target, key, kind, body string) (*Comment, bool, error) {
	want, err := RenderComment(body, key, kind)
	if err != nil {
		return nil, false, err
	}
	me, err := f.Me(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("ensure comment %s: %w", kind, err)
	}
	comments, err := f.Comments(ctx, t)
	if err != nil {
		return nil, false, fmt.Errorf("ensure comment %s: %w", kind, err)
	}
	for i := range comments {
		c := &comments[i]
		if !strings.EqualFold(c.Author, me.Login) {
			continue
		}
		if k, _, ok := ParseMarker(c.Body); !ok || k != key {
			continue
		}
		if sameText(c.Body, want) {
			return c, false, nil
		}
		edited, err := f.EditComment(ctx, t, c.ID, want)
		if err != nil {
			return nil, false, fmt.Errorf("ensure comment %s: %w", kind, err)
		}
		return edited, true, nil
	}
	created, err := f.CreateComment(ctx, t, want)
	if err != nil {
		return nil, false, fmt.Errorf("ensure comment %s: %w", kind, err)
	}
	return created, true, nil
}

func sameText(a, b string) bool {
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	return norm(a) == norm(b)
}
