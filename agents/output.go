package agents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/alchemic-studio/alfred/sandbox"
)

// Helpers for CLI implementations reading process output.

var versionRE = regexp.MustCompile(`\bv?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\b`)

// FindVersion returns the first x.y.z version in out ("2.1.197 (Claude Code)",
// "codex-cli 0.171.0").
func FindVersion(out []byte) (*semver.Version, error) {
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoVersion, truncate(out, 200))
	}
	v, err := semver.StrictNewVersion(string(m[1]))
	if err != nil {
		return nil, fmt.Errorf("parse version %q: %w", m[1], err)
	}
	return v, nil
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// StripANSI removes terminal escape sequences (some CLIs colour their errors
// even with TERM=dumb).
func StripANSI(b []byte) []byte { return ansiRE.ReplaceAll(b, nil) }

// JSONLines decodes each line of out that is a JSON object into a fresh T and
// calls fn with it; other lines are skipped. fn returns false to stop.
func JSONLines[T any](out []byte, fn func(T) bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var v T
		if json.Unmarshal(line, &v) != nil {
			continue
		}
		if !fn(v) {
			return
		}
	}
}

// AnyJSONLine reports whether a line of out decodes into a T for which
// match is true (see JSONLines).
func AnyJSONLine[T any](out []byte, match func(T) bool) bool {
	found := false
	JSONLines(out, func(v T) bool {
		found = match(v)
		return !found
	})
	return found
}

// LastJSONLine returns the last line of out that decodes into a T for which
// match is true (see JSONLines).
func LastJSONLine[T any](out []byte, match func(T) bool) (T, bool) {
	var last T
	found := false
	JSONLines(out, func(v T) bool {
		if match(v) {
			last, found = v, true
		}
		return true
	})
	return last, found
}

// ErrorText is what a CLI printed on stderr, without terminal escapes and
// surrounding space: the Output.Text of a run that printed nothing better.
func ErrorText(stderr []byte) string { return strings.TrimSpace(string(StripANSI(stderr))) }

// FirstLine is the first non-empty line of b, trimmed, without terminal
// escapes.
func FirstLine(b []byte) string {
	for _, l := range strings.Split(string(StripANSI(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// NoResult is the Output.Text of a run whose CLI printed no result it could
// read: what it said on stderr (ErrorText), else the last line of its
// stdout that is no JSON (nor a torn JSON line), else its exit code, so that the text always
// says why and is never a bare "failed".
func NoResult(res *sandbox.Result) string {
	if s := ErrorText(res.Stderr); s != "" {
		return s
	}
	lines := strings.Split(string(StripANSI(res.Stdout)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "{") && !json.Valid([]byte(l)) {
			return l
		}
	}
	if len(bytes.TrimSpace(res.Stdout)) == 0 {
		return fmt.Sprintf("the CLI exited with code %d and printed nothing", res.ExitCode)
	}
	return fmt.Sprintf("the CLI exited with code %d without printing its result", res.ExitCode)
}
