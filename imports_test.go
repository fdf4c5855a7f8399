package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules checks the "never imports" column of docs/design.md's
// package map, read from the page itself (importRules): a package of the
// left column imports none of the right (nor their sub-packages); "any
// Alfred package but X" bans every other package of the module. Tests are
// left out. Each ruled package's doc comment says the same (its "never
// imports" or "imports no other Alfred package" sentence names them).
func TestImportRules(t *testing.T) {
	rules := importRules(t)
	if len(rules) < 8 {
		t.Fatalf("docs/design.md's package map gives %d rules: is its table still there?", len(rules))
	}
	for _, r := range rules {
		err := filepath.WalkDir(r.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if own, ok := strings.CutPrefix(p, module); ok && r.bans(own) {
					t.Errorf("%s imports %s: docs/design.md says %s never imports it", path, p, r.dir)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", r.dir, err)
		}
		checkDocSaysRule(t, r)
	}
}

const module = "github.com/alchemic-studio/alfred/"

// importRule is one row of the package map: dir never imports banned (and
// their sub-packages) but except, or, with all, any package of the module
// but except.
type importRule struct {
	dir            string
	banned, except []string
	all            bool
}

// bans tells whether the rule forbids importing the module's package own.
func (r importRule) bans(own string) bool {
	if own == r.dir || strings.HasPrefix(own, r.dir+"/") {
		return false
	}
	under := func(list []string) bool {
		return slices.ContainsFunc(list, func(b string) bool { return own == b || strings.HasPrefix(own, b+"/") })
	}
	if slices.Contains(r.except, own) {
		return false
	}
	return r.all || under(r.banned)
}

// importRules reads the rules off docs/design.md's package map: the rows
// whose last column is not "—".
func importRules(t *testing.T) []importRule {
	t.Helper()
	page, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatalf("the rules are documented in docs/design.md: %v", err)
	}
	code, but := regexp.MustCompile("`([^`]+)`"), regexp.MustCompile(`\(but ([^)]*)\)`)
	var rules []importRule
	for _, line := range strings.Split(string(page), "\n") {
		cols := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cols) < 3 {
			continue
		}
		dir := strings.TrimSuffix(strings.Trim(strings.TrimPrefix(cols[0], "| "), "`"), "/")
		last := strings.TrimSuffix(strings.TrimSpace(cols[len(cols)-1]), " |")
		if last == "—" || strings.Contains(dir, "`") {
			continue
		}
		r := importRule{dir: dir, all: strings.HasPrefix(last, "any Alfred package")}
		// "(but `x`)" after a banned package allows one of its sub-packages.
		for _, m := range but.FindAllStringSubmatch(last, -1) {
			for _, c := range code.FindAllStringSubmatch(m[1], -1) {
				r.except = append(r.except, c[1])
			}
		}
		for _, m := range code.FindAllStringSubmatch(but.ReplaceAllString(last, ""), -1) {
			if r.all {
				r.except = append(r.except, m[1])
			} else {
				r.banned = append(r.banned, m[1])
			}
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("docs/design.md rules folder %s, which is not there: %v", dir, err)
			continue
		}
		rules = append(rules, r)
	}
	return rules
}

// checkDocSaysRule: the package's doc comment says its rule: "never
// imports" with each banned package, or "imports no other Alfred package"
// with each exception.
func checkDocSaysRule(t *testing.T, r importRule) {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), r.dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, p := range pkgs {
		for _, f := range p.Files {
			if f.Doc != nil {
				doc += f.Doc.Text()
			}
		}
	}
	doc = strings.Join(strings.Fields(doc), " ")
	want, names := "never imports", r.banned
	if r.all {
		want, names = "imports no other Alfred package", r.except
	}
	if !strings.Contains(doc, want) {
		t.Errorf("the doc comment of %s does not say its rule of docs/design.md (%q ...)", r.dir, want)
		return
	}
	for _, n := range names {
		if !strings.Contains(doc, n) {
			t.Errorf("the doc comment of %s does not name %s in its rule", r.dir, n)
		}
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
