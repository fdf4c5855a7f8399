package forges

import (
	"context"
	"fmt"
	"strings"
)

// The bot's part of an issue description sits between these two markers.
const (
	SectionStart = "<!-- agent:section:start -->"
	SectionEnd   = "<!-- agent:section:end -->"
)

// Rules of the managed description section. They are chosen so that the text
// people wrote is never changed and a section is found again after a round trip:
//
//   - A marker counts only outside fenced code blocks (``` or ~~~ fences, as in
//     CommonMark: up to three spaces of indent, a closing fence of the same
//     character at least as long as the opening one). A marker inside a fence
//     is text. A fence left open runs to the end of the body.
//   - The section is the first start marker that is directly followed by an end
//     marker (no other start marker between them). A start marker with no end
//     (unterminated) or followed by another start is text, and so is every
//     marker of a second section: only the first section is managed.
//   - ReplaceSection changes only the bytes between the two markers of that
//     section. With no section, it appends one at the end, after a blank line
//     (and after a closing fence line when the body ends inside an open fence,
//     so the appended section is not swallowed by it); every existing byte is
//     kept.
//   - The section text is normalized before it is written: line endings become
//     those of the body (CRLF when the body has any CRLF or ends in CR, else LF), leading and
//     trailing blank lines are dropped, a fence it leaves open is closed, and
//     section markers inside it are defused ("agent:section:" becomes
//     "agent-section:") so they cannot end the section early.
//   - Section returns the text between the markers without the line break that
//     follows the start marker and the one that precedes the end marker, with
//     LF line endings.

// Section returns the managed section of body and whether body has one.
func Section(body string) (string, bool) {
	lo, hi, ok := locateSection(body)
	if !ok {
		return "", false
	}
	s := body[lo:hi]
	s = strings.TrimPrefix(s, "\n")
	if strings.HasPrefix(s, "\r\n") {
		s = s[2:]
	}
	if strings.HasSuffix(s, "\r\n") {
		s = s[:len(s)-2]
	} else {
		s = strings.TrimSuffix(s, "\n")
	}
	return strings.ReplaceAll(s, "\r\n", "\n"), true
}

// ReplaceSection returns body with its managed section holding section,
// appending a section when body has none. Bytes outside the section never change.
func ReplaceSection(body, section string) string {
	nl := "\n"
	if strings.Contains(body, "\r\n") || strings.HasSuffix(body, "\r") {
		// A body ending in CR gets CRLF: the line break appended after it
		// makes one, and the next call must choose the same line ending.
		nl = "\r\n"
	}
	c := normalizeSection(section)
	content := nl
	if c != "" {
		content = nl + strings.ReplaceAll(c, "\n", nl) + nl
	}
	if lo, hi, ok := locateSection(body); ok {
		return body[:lo] + content + body[hi:]
	}
	var b strings.Builder
	b.WriteString(body)
	if body != "" && !strings.HasSuffix(body, "\n") {
		b.WriteString(nl)
	}
	if open, fence := openFenceAtEnd(body); open {
		b.WriteString(fence + nl)
	}
	if body != "" {
		b.WriteString(nl)
	}
	b.WriteString(SectionStart + content + SectionEnd + nl)
	return b.String()
}

// EnsureSection writes section into the managed section of issue number's
// description, leaving the rest of the description as it is. It does not write
// when the description already holds that section, and reports whether it wrote.
func EnsureSection(ctx context.Context, f Forge, p Project, number int64, section string) (bool, error) {
	is, err := f.Issue(ctx, p, number)
	if err != nil {
		return false, fmt.Errorf("ensure section of issue %d: %w", number, err)
	}
	body := ReplaceSection(is.Body, section)
	if body == is.Body {
		return false, nil
	}
	if err := f.SetIssueBody(ctx, p, number, body); err != nil {
		return false, fmt.Errorf("ensure section of issue %d: %w", number, err)
	}
	return true, nil
}

func normalizeSection(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "agent:section:", "agent-section:")
	s = strings.Trim(s, "\n")
	if open, fence := openFenceAtEnd(s); open {
		s += "\n" + fence
	}
	return s
}

// markerToken is a section marker found outside fenced code blocks.
type markerToken struct {
	start bool
	at    int // byte offset of the marker
}

// locateSection returns the byte range between the markers of the managed
// section (after the start marker, up to the end marker).
func locateSection(body string) (lo, hi int, ok bool) {
	toks := markerTokens(body)
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].start && !toks[i+1].start {
			return toks[i].at + len(SectionStart), toks[i+1].at, true
		}
	}
	return 0, 0, false
}

// markerTokens lists the section markers of body that are outside fences, in order.
func markerTokens(body string) []markerToken {
	var toks []markerToken
	var fc fenceTracker
	for lo := 0; lo < len(body); {
		hi := strings.IndexByte(body[lo:], '\n')
		if hi < 0 {
			hi = len(body)
		} else {
			hi += lo
		}
		line := body[lo:hi]
		if !fc.line(strings.TrimRight(line, "\r")) {
			toks = appendMarkers(toks, line, lo)
		}
		lo = hi + 1
	}
	return toks
}

func appendMarkers(toks []markerToken, line string, base int) []markerToken {
	for i := 0; i < len(line); {
		s := strings.Index(line[i:], SectionStart)
		e := strings.Index(line[i:], SectionEnd)
		switch {
		case s < 0 && e < 0:
			return toks
		case e < 0 || (s >= 0 && s < e):
			toks = append(toks, markerToken{start: true, at: base + i + s})
			i += s + len(SectionStart)
		default:
			toks = append(toks, markerToken{start: false, at: base + i + e})
			i += e + len(SectionEnd)
		}
	}
	return toks
}

// fenceTracker follows CommonMark fenced code blocks line by line.
type fenceTracker struct {
	char byte // '`' or '~' while inside a fence, 0 outside
	n    int  // length of the opening fence
}

// line feeds one line (without its line break) and reports whether the line
// is part of a fence (an opening or closing fence line, or inside a block).
func (f *fenceTracker) line(l string) bool {
	indent := 0
	for indent < len(l) && indent < 4 && l[indent] == ' ' {
		indent++
	}
	if indent > 3 {
		return f.char != 0
	}
	rest := l[indent:]
	run := 0
	if rest != "" && (rest[0] == '`' || rest[0] == '~') {
		for run < len(rest) && rest[run] == rest[0] {
			run++
		}
	}
	if f.char != 0 {
		if run >= f.n && rest[0] == f.char && strings.TrimRight(rest[run:], " \t\r") == "" {
			f.char, f.n = 0, 0
		}
		return true
	}
	if run >= 3 && !(rest[0] == '`' && strings.Contains(rest[run:], "`")) {
		f.char, f.n = rest[0], run
		return true
	}
	return false
}

// openFenceAtEnd reports whether s ends inside a fenced block and, if so, a
// line that closes it.
func openFenceAtEnd(s string) (bool, string) {
	var fc fenceTracker
	for _, l := range strings.Split(s, "\n") {
		fc.line(strings.TrimRight(l, "\r"))
	}
	if fc.char == 0 {
		return false, ""
	}
	return true, strings.Repeat(string(fc.char), fc.n)
}
