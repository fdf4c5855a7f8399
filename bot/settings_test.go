package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

type mapOverrides map[Scope]map[string]string

func (m mapOverrides) Override(s Scope, key string) (string, bool) {
	v, ok := m[s][key]
	return v, ok
}

func TestSettingsResolveProjectThenOrganizationThenDefault(t *testing.T) {
	org := Scope{Forge: "forgejo", Owner: "alice"}
	proj := Scope{Forge: "forgejo", Owner: "alice", Project: "demo"}
	other := Scope{Forge: "forgejo", Owner: "alice", Project: "other"}
	var reported []SettingProblem
	s := Settings{Overrides: mapOverrides{
		org:  {"AGENT_SESSION_RESUME": "false", "LLM_MAX_RETRIES": "5", "RUN_TIMEOUT": "soon"},
		proj: {"AGENT_SESSION_RESUME": "true", "BRANCH_PREFIX": "bot/", "LLM_MAX_RETRIES": "lots", "RUN_TIMEOUT": "-1m"},
	}, Report: func(p SettingProblem) { reported = append(reported, p) }}
	if !AgentSessionResume.Get(s, proj) {
		t.Error("the project's true must win over the organization's false")
	}
	if AgentSessionResume.Get(s, other) {
		t.Error("another project of the organization must get the organization's false")
	}
	if got := BranchPrefix.Get(s, proj); got != "bot/" {
		t.Errorf("BRANCH_PREFIX = %q", got)
	}
	if got := BranchPrefix.Get(s, other); got != "agent/" {
		t.Errorf("default BRANCH_PREFIX = %q", got)
	}
	if got := LLMMaxRetries.Get(s, proj); got != 5 {
		t.Errorf("an unparsable project value must fall through to the organization's: got %d", got)
	}
	if got := RunTimeout.Get(s, proj); got != 30*time.Minute {
		t.Errorf("two bad values must fall through to the default, not zero: RUN_TIMEOUT = %s", got)
	}
	if !RequirePlanValidation.Get(Settings{}, proj) {
		t.Error("without overrides the default (true) applies")
	}
	if got := CIFixHardCap.Get(Settings{Defaults: map[string]string{"CI_FIX_HARD_CAP": "7"}}, proj); got != 7 {
		t.Errorf("a replaced default must apply: %d", got)
	}
	want := map[string]bool{"project forgejo/alice/demo LLM_MAX_RETRIES": true, "project forgejo/alice/demo RUN_TIMEOUT": true, "organization forgejo/alice RUN_TIMEOUT": true}
	for _, p := range reported {
		if !want[p.Scope.String()+" "+p.Key] || p.Unknown || p.Err == nil {
			t.Errorf("unexpected report %v", p)
		}
		delete(want, p.Scope.String()+" "+p.Key)
	}
	if len(want) > 0 {
		t.Errorf("bad values not reported: %v", want)
	}
	if v, err := s.Value(proj, "RUN_TIMEOUT"); err != nil || v != "30m" {
		t.Errorf("Value(RUN_TIMEOUT) = %q, %v", v, err)
	}
	if _, err := s.Value(proj, "NO_SUCH_SETTING"); err == nil || !strings.Contains(err.Error(), "AGENT_SESSION_RESUME") {
		t.Errorf("unknown key must be refused with the known keys listed: %v", err)
	}
	for key, want := range map[string]string{"BRANCH_PREFIX": "project", "LLM_MAX_RETRIES": "organization", "RUN_TIMEOUT": "default"} {
		if got := s.Source(proj, key); got != want {
			t.Errorf("Source(%s) = %q, want %q", key, got, want)
		}
	}
}

func TestSettingParse(t *testing.T) {
	tests := []struct {
		key, in, want, errWant string
	}{
		{"AGENT_SESSION_RESUME", "TRUE", "true", ""},
		{"AGENT_SESSION_RESUME", "0", "false", ""},
		{"AGENT_SESSION_RESUME", "yes please", "", "true or false"},
		{"LLM_MAX_RETRIES", " 3 ", "3", ""},
		{"LLM_MAX_RETRIES", "3.5", "", "whole number"},
		{"LLM_MAX_RETRIES", "-1", "", "outside 0 to 20"},
		{"RUN_TIMEOUT", "90s", "1m30s", ""},
		{"RUN_TIMEOUT", "2h0m", "2h", ""},
		{"RUN_TIMEOUT", "0s", "", "positive duration"},
		{"BRANCH_PREFIX", "bots/", "bots/", ""},
		{"BRANCH_PREFIX", "a..b/", "", "git branch"},
		{"AGENT_ADAPTER", " ", "", "empty"},
		{"AGENT_CREDENTIAL_MOUNTS", "claude-code=relative:/home/agent/.claude", "", "AGENT_CREDENTIAL_MOUNTS"},
	}
	for _, tt := range tests {
		d, err := LookupSetting(tt.key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Parse(tt.in)
		if tt.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errWant) {
				t.Errorf("%s=%q: error %v, want one saying %q", tt.key, tt.in, err, tt.errWant)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s=%q: got %q, %v; want %q", tt.key, tt.in, got, err, tt.want)
		}
	}
}

// Every declaration is in the catalogue, once, with a default of its type,
// and the reference lists each.
func TestCatalogueHoldsEveryDeclaration(t *testing.T) {
	declared := map[string]bool{}
	for _, f := range botFiles(t, token.NewFileSet(), func(name string) bool { return strings.HasPrefix(name, "settings") }) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok && strings.HasSuffix(id.Name, "Setting") && id.Name != "Setting" && len(call.Args) > 0 {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					key, _ := strconv.Unquote(lit.Value)
					declared[key] = true
				}
			}
			return true
		})
	}
	if len(declared) != len(Catalogue) || len(SettingKeys()) != len(Catalogue) {
		t.Errorf("%d settings declared, %d in the catalogue (%d keys)", len(declared), len(Catalogue), len(SettingKeys()))
	}
	var ref bytes.Buffer
	if err := Reference(&ref); err != nil {
		t.Fatal(err)
	}
	for key := range declared {
		if _, err := LookupSetting(key); err != nil {
			t.Errorf("%s is declared but not in the catalogue (add it to Catalogue)", key)
		}
		if !strings.Contains(ref.String(), "| `"+key+"` |") {
			t.Errorf("the reference has no row for %s", key)
		}
	}
	if AgentSessionResume.Default() != true || RunTimeout.Default() != 30*time.Minute || Catalogue["RUN_TIMEOUT"].Default != "30m" {
		t.Error("typed defaults and their text differ")
	}
}

// The engine reads a setting through its typed declaration only: a key
// written as a string literal in a call or an index outside the settings
// files would be read as nothing if mistyped. (The lifecycle table names
// the setting bounding a step as data, checked by TestTable.)
func TestNoSettingReadByKeyLiteral(t *testing.T) {
	fset := token.NewFileSet()
	for _, f := range botFiles(t, fset, func(name string) bool { return !strings.HasPrefix(name, "settings") }) {
		check := func(e ast.Expr, how string) {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return
			}
			if key, _ := strconv.Unquote(lit.Value); Catalogue[key].Key != "" {
				t.Errorf("%s: setting %s read by its key %s; use its declaration, e.g. LLMMaxRetries.Get(e.settings, scope)", fset.Position(lit.Pos()), key, how)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				for _, a := range n.Args {
					check(a, "as a call argument")
				}
			case *ast.IndexExpr:
				check(n.Index, "as an index")
			}
			return true
		})
	}
}

// botFiles parses the package's non-test files whose names keep says.
func botFiles(t *testing.T, fset *token.FileSet, keep func(string) bool) []*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || !keep(name) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func TestUnknownAndBadOverridesAreReported(t *testing.T) {
	st, err := state.Open(context.Background(), filepath.Join(t.TempDir(), "state.git"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(project, key, value string) state.SettingOverride {
		scope := state.ScopeProject
		if project == "" {
			scope = state.ScopeOrganization
		}
		raw, _ := json.Marshal(value)
		return state.SettingOverride{Scope: scope, Forge: "forgejo", Owner: "alice", Project: project, Key: key, Value: raw, UpdatedAt: time.Now()}
	}
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		for _, o := range []state.SettingOverride{
			put("", "LLM_MAX_RETRIES", "4"),
			put("demo", "LLM_MAX_RETRIES", "many"), // bad: falls back to the organization's 4
			put("demo", "LLM_MAX_RETIRES", "9"),    // unknown: a typo
			put("demo", "REQUIRE_PLAN_VALIDATION", "false"),
		} {
			if err := tx.PutSetting(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := StoreOverrides{st}.All()
	if err != nil || len(all) != 4 {
		t.Fatalf("All: %v, %v", all, err)
	}
	problems := CheckOverrides(all)
	got := map[string]bool{}
	for _, p := range problems {
		got[p.Key] = p.Unknown
	}
	if len(problems) != 2 || got["LLM_MAX_RETIRES"] != true || got["LLM_MAX_RETRIES"] != false {
		t.Fatalf("problems: %v", problems)
	}

	var logs bytes.Buffer
	cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := engineSettings(cfg)
	proj := Scope{Forge: "forgejo", Owner: "alice", Project: "demo"}
	for range 3 {
		if got := LLMMaxRetries.Get(s, proj); got != 4 {
			t.Fatalf("LLM_MAX_RETRIES = %d, want the organization's 4", got)
		}
	}
	if RequirePlanValidation.Get(s, proj) {
		t.Error("a good override must apply")
	}
	out := logs.String()
	for _, want := range []string{
		`level=WARN msg="unknown setting in the state branch, ignored" scope="project forgejo/alice/demo" key=LLM_MAX_RETIRES`,
		`level=WARN msg="setting override ignored" scope="project forgejo/alice/demo" key=LLM_MAX_RETRIES value=many`,
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want once %q in the log:\n%s", want, out)
		}
	}
}
