package run

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Safe outputs: what leaves the sandbox is checked before it is written
// anywhere. A change is held for a person (the mailbox blocks with one
// comment listing the files and why, the patch kept on the run) when it
// touches CI definitions (unless AGENT_ALLOW_CI_CHANGES), git hooks,
// attributes or submodules, or carries a secret Alfred holds or a token
// that looks like a credential. Text the agent wrote for the thread keeps
// no external image and no link to a host other than the forge's.

// ciDefinitions are the files and folders a forge's CI runs from.
var ciDefinitions = []string{".forgejo/workflows/", ".gitea/workflows/", ".github/workflows/", ".gitlab-ci.yml",
	".gitlab/ci/", ".woodpecker.yml", ".woodpecker.yaml", ".woodpecker/", ".drone.yml"}

// gitControls are files that change what git or a developer's git runs.
var gitControls = []string{".githooks/", ".husky/", ".gitmodules"}

// maxScanBytes bounds how much of each changed file is read for secrets.
const maxScanBytes = 4 << 20

// checkChange lists what of ch is held for a person: the files the staging
// refused, and the safe-output rules over the rest. secrets are the values
// Alfred holds.
func (w *Worktree) checkChange(ctx context.Context, ch *Change, allowCI bool, secrets []string) ([]Refusal, error) {
	held := slices.Clone(ch.Refused)
	scan := map[string][]string{} // blob -> the paths that carry it
	var blobs []string
	for _, f := range ch.Files {
		switch why := pathRule(f, allowCI); {
		case why != "":
			held = append(held, Refusal{f.Path, why})
		case f.Status != 'D' && strings.HasPrefix(f.NewMode, "100"):
			if scan[f.NewBlob] == nil {
				blobs = append(blobs, f.NewBlob)
			}
			scan[f.NewBlob] = append(scan[f.NewBlob], f.Path)
		}
	}
	err := w.blobs(ctx, blobs, maxScanBytes, func(sha string, body []byte) {
		if why := secretIn(body, secrets); why != "" {
			for _, p := range scan[sha] {
				held = append(held, Refusal{p, why})
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

// pathRule is why the entry f may not be changed by an agent, if it may not.
func pathRule(f ChangedFile, allowCI bool) string {
	p := f.Path
	switch {
	case f.NewMode == "160000" || f.OldMode == "160000":
		return "is a submodule (gitlink): submodule changes are not accepted"
	case !allowCI && underAny(p, ciDefinitions):
		return "is a CI definition: a project allows agents to change CI with AGENT_ALLOW_CI_CHANGES=true"
	case path.Base(p) == ".gitattributes":
		return "is a git attributes file, which decides what git runs on checkout"
	case underAny(p, gitControls):
		return "controls git hooks or submodules"
	}
	return ""
}

func underAny(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == strings.TrimSuffix(pre, "/") || strings.HasSuffix(pre, "/") && strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// tokenPatterns are credentials by their well-known shapes.
var tokenPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"a private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
	{"a GitHub token", regexp.MustCompile(`\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{60,}`)},
	{"a GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`)},
	{"an Anthropic key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{20,}`)},
	{"an OpenAI key", regexp.MustCompile(`\bsk-(proj-)?[A-Za-z0-9_\-]{32,}`)},
	{"an AWS access key", regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`)},
}

// assigned is a value given to a name that says it is secret.
var assigned = regexp.MustCompile(`(?i)(api[_-]?key|secret|token|passw(or)?d|credential)["']?\s*[:=]\s*["']?([A-Za-z0-9+/_\-.=]{24,})`)

// secretIn says what secret body carries, if any: one Alfred holds, a
// credential of a known shape, or a high-entropy value assigned to a
// secret-sounding name.
func secretIn(body []byte, secrets []string) string {
	if bytes.IndexByte(body[:min(len(body), 8000)], 0) >= 0 {
		body = nil // binary: only Alfred's own secrets are looked for
	}
	for _, s := range secrets {
		if len(s) >= 8 && bytes.Contains(body, []byte(s)) {
			return "contains a secret Alfred holds (a key or token of its configuration)"
		}
	}
	for _, t := range tokenPatterns {
		if t.re.Match(body) {
			return "contains what looks like " + t.name
		}
	}
	for _, m := range assigned.FindAllSubmatch(body, -1) {
		if entropy(m[3]) >= 4.0 {
			return fmt.Sprintf("contains a high-entropy value assigned to %q", m[1])
		}
	}
	return ""
}

// redactTokens hides in text every credential of a known shape and every
// high-entropy value assigned to a secret-sounding name: a held patch is
// kept on the run and shown on its page.
func redactTokens(text string) string {
	for _, t := range tokenPatterns {
		text = t.re.ReplaceAllString(text, "***")
	}
	return assigned.ReplaceAllStringFunc(text, func(m string) string {
		sub := assigned.FindStringSubmatch(m)
		if entropy([]byte(sub[3])) < 4.0 {
			return m
		}
		return strings.Replace(m, sub[3], "***", 1)
	})
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s []byte) float64 {
	var counts [256]int
	for _, c := range s {
		counts[c]++
	}
	var h float64
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

var (
	mdImage   = regexp.MustCompile(`!\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	mdRefDef  = regexp.MustCompile(`(?m)^[ \t]{0,3}\[([^\]]+)\]:[ \t]*<?(\S+?)>?(?:[ \t]+.*)?$`)
	htmlImage = regexp.MustCompile(`(?is)<\s*(img|image|picture|source|video|audio|iframe|object|embed|link|svg|style|script|base|meta|form|input)\b[^>]*>`)
	htmlHref  = regexp.MustCompile(`(?is)<\s*a\b[^>]*>`)
	bareURL   = regexp.MustCompile("(?i)(^|[\\s(])((?:https?|ftp)://[^\\s<>`)\\]]+|www\\.[^\\s<>`)\\]]+)")
	autolink  = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>`)
	// anyDef is a line that may start a reference definition, in a quote
	// or not: what mdRefDef did not find local is made plain text.
	anyDef = regexp.MustCompile(`(?m)^([ \t>]*\[[^\]\n]+\]):`)
)

// Markers of what Neutralise found local, so that the last pass, which
// disarms every link and definition left, keeps them.
const (
	keptLink = "\x00L" // inside a local link's or image's "]("
	keptDef  = "\x00D" // inside a local reference definition's "]:"
)

// Neutralise makes text the agent wrote safe to post on the forge whose
// host is forgeHost: images are never loaded from anywhere but the forge (a
// rendered image is a request its author sees), links to other hosts become
// plain text that names the host, and HTML that loads or links is dropped.
// What the patterns recognise is rewritten with a word on what was there;
// any link or definition syntax left after them (an odd title, nested
// brackets, a destination on the next line) is disarmed as a whole.
func Neutralise(text, forgeHost string) string {
	text = strings.ReplaceAll(text, "\x00", "") // the markers' byte is Alfred's alone
	text = htmlImage.ReplaceAllString(text, "(HTML removed by Alfred)")
	text = htmlHref.ReplaceAllString(text, "")
	text = replaceLinks(text, mdImage, forgeHost, func(sub []string) string {
		return fmt.Sprintf("[image %q not shown: %s]", sub[1], hostOf(sub[2]))
	})
	text = replaceLinks(text, mdLink, forgeHost, func(sub []string) string {
		return fmt.Sprintf("%s (link to %s removed)", sub[1], hostOf(sub[2]))
	})
	text = mdRefDef.ReplaceAllStringFunc(text, func(m string) string {
		sub := mdRefDef.FindStringSubmatch(m)
		if local(sub[2], forgeHost) {
			return strings.Replace(m, "]:", "]"+keptDef+":", 1)
		}
		return fmt.Sprintf("[%s]%s: # (link to %s removed)", sub[1], keptDef, hostOf(sub[2]))
	})
	text = bareURL.ReplaceAllStringFunc(text, func(m string) string {
		sub := bareURL.FindStringSubmatch(m)
		if local(sub[2], forgeHost) {
			return m
		}
		return sub[1] + "`" + strings.ReplaceAll(sub[2], "`", "") + "`"
	})
	text = autolink.ReplaceAllStringFunc(text, func(m string) string {
		if inner := m[1 : len(m)-1]; !local(inner, forgeHost) || !strings.Contains(inner, "://") {
			return "`" + strings.ReplaceAll(inner, "`", "") + "`"
		}
		return m
	})
	text = strings.ReplaceAll(text, "](", `\](`)
	text = anyDef.ReplaceAllString(text, `$1\:`)
	return strings.NewReplacer(keptLink, "", keptDef, "").Replace(text)
}

// replaceLinks rewrites the matches of re (a link or an image: its text,
// then its destination) with foreign when the destination is not local, and
// marks the local ones kept.
func replaceLinks(text string, re *regexp.Regexp, forgeHost string, foreign func(sub []string) string) string {
	return re.ReplaceAllStringFunc(text, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if local(sub[2], forgeHost) {
			return strings.Replace(m, "](", "]"+keptLink+"(", 1)
		}
		return foreign(sub)
	})
}

// local tells whether a link stays on the forge: a plain relative path or
// anchor (no scheme, no host, nothing Markdown would decode into one: no
// backslash, no entity), or an http(s) link to forgeHost.
func local(raw, forgeHost string) bool {
	if strings.ContainsAny(raw, "\\&") || strings.HasPrefix(raw, "//") || strings.HasPrefix(strings.ToLower(raw), "www.") {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.Scheme == "" && u.Host == "" && u.Opaque == "" {
		return true
	}
	return forgeHost != "" && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, forgeHost)
}

// hostOf names the host of a link for the text that replaces it.
func hostOf(raw string) string { return cmp.Or(urlHost(raw), "another host") }

// urlHost is the host (and port) of raw, "" when it has none.
func urlHost(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}
