package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the README's reference tables from `alfred config reference`")

// markdownTables returns the tables of a Markdown text: runs of lines that
// start with "|", each with its final newline.
func markdownTables(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(l, "|") {
			cur.WriteString(l)
			continue
		}
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// TestReadmeHasTheReference keeps the README's two reference tables (the
// process configuration and the project settings) equal to what `alfred
// config reference` prints: go test -run TestReadmeHasTheReference -update-readme
// rewrites them.
func TestReadmeHasTheReference(t *testing.T) {
	var ref bytes.Buffer
	if err := configReference(&ref); err != nil {
		t.Fatal(err)
	}
	want := markdownTables(ref.String())
	if len(want) != 2 {
		t.Fatalf("the reference has %d tables, want 2:\n%s", len(want), ref.String())
	}
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	have := markdownTables(readme)
	for _, table := range want {
		header, _, _ := strings.Cut(table, "\n")
		var found string
		for _, h := range have {
			if strings.HasPrefix(h, header+"\n") {
				found = h
			}
		}
		switch {
		case found == "":
			t.Errorf("README.md has no table with the header %q", header)
		case found == table:
		case *updateReadme:
			readme = strings.Replace(readme, found, table, 1)
		default:
			t.Errorf("README.md's table %q differs from `alfred config reference`; run go test -run TestReadmeHasTheReference -update-readme .\nREADME:\n%s\nreference:\n%s", header, found, table)
		}
	}
	if *updateReadme && readme != string(raw) {
		if err := os.WriteFile("README.md", []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
