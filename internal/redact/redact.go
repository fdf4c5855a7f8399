// Package redact hides secret values in text bound for records, comments and
// pages. The engine uses it on what it records and publishes, the pages on
// what they show, with the same list of secrets.
package redact

import (
	"slices"
	"strings"
)

// MinLen is the length of the shortest value hidden: a shorter one would
// hide ordinary words.
const MinLen = 4

// Mark is what a secret becomes.
const Mark = "[redacted]"

// Secrets replaces every value of secrets found in text with Mark, the
// longest first, so that no part of a secret that holds another is left.
func Secrets(text string, secrets []string) string {
	sorted := slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < MinLen })
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, s := range sorted {
		text = strings.ReplaceAll(text, s, Mark)
	}
	return text
}
