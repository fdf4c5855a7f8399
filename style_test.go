package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the product may be: the
// team's rule, which this test keeps. Test files are left out: a
// table-driven test's table may be long.
const maxFuncLines = 100

// TestNoLongFunctions: no function or method of the module's Go files, as
// git tracks them (tests left out), is longer than maxFuncLines lines (its signature to its
// closing brace).
func TestNoLongFunctions(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files names %d Go files: is this the repository's root?", len(files))
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines long (at most %d)", path, start.Line, fn.Name.Name, n, maxFuncLines)
			}
		}
	}
}
