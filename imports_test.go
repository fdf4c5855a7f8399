package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules checks the "never imports" column of docs/design.md: a
// package of the left column imports none of the right (nor their
// sub-packages); "*" is every Alfred package but the leaf pieces of
// internal/ the column names (allowed). Tests are left out.
func TestImportRules(t *testing.T) {
	const module = "github.com/alchemic-studio/alfred/"
	rules := map[string][]string{
		"bot":           {"views", "config"},
		"bot/lifecycle": {"bot", "views", "config", "sandbox", "gateway"},
		"forges":        {"bot", "state", "agents", "sandbox", "views"},
		"agents":        {"bot", "forges", "state", "views"},
		"sandbox":       {"*"},
		"state":         {"*"},
		"views":         {"bot", "agents", "sandbox"},
		"config":        {"*"},
		"metrics":       {"*"},
		"gateway":       {"bot", "forges", "agents", "sandbox", "state", "views", "config", "metrics"},
	}
	allowed := map[string][]string{"sandbox": {"internal/tunnel"}, "gateway": {"internal/redact"}, "state": {"internal/gitcmd"}}
	for dir, banned := range rules {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				own, ok := strings.CutPrefix(p, module)
				if !ok || strings.HasPrefix(own, dir+"/") || own == dir || slices.Contains(allowed[dir], own) {
					continue
				}
				for _, b := range banned {
					if b == "*" || own == b || strings.HasPrefix(own, b+"/") {
						t.Errorf("%s imports %s: docs/design.md says %s never imports %s", path, p, dir, b)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
	if _, err := os.Stat("docs/design.md"); err != nil {
		t.Errorf("the rules are documented in docs/design.md: %v", err)
	}
}

// TestKindsNamedOnlyInForges: the forge kinds are named only under forges/
// (each forge's package and forges/setup, their one registration): no
// string literal "forgejo", "github" or "gitlab" in the code of another
// package, so adding a forge touches forges/ alone. Tests, test helpers and
// testdata are left out; config checks ALFRED_FORGE against the kinds
// forges/setup gives it (config.ForgeKind).
func TestKindsNamedOnlyInForges(t *testing.T) {
	kinds := []string{`"forgejo"`, `"github"`, `"gitlab"`}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "forges", "e2e", "testdata", ".git", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && slices.Contains(kinds, strings.ToLower(lit.Value)) {
				t.Errorf("%s names the forge kind %s: its knowledge belongs to forges/setup", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
