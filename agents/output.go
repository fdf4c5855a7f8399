package agents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/Masterminds/semver/v3"
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

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
