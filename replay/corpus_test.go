package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadSuiteCorpus reads the corpus the e2e test replays.
func TestLoadSuiteCorpus(t *testing.T) {
	cases, err := Load("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
		if c.Title == "" || len(c.Check) < 3 || c.Check[0] != "sh" || time.Duration(c.TimeLimit) != 10*time.Minute || time.Duration(c.CheckLimit) != time.Minute {
			t.Errorf("case %s: %+v", c.Name, c)
		}
	}
	if got := strings.Join(names, ","); got != "add-double,fix-add,port-to-rust" {
		t.Fatalf("cases %s", got)
	}
	if th := cases[1].Thread; len(th) != 2 || th[0].Role != RoleMaintainer || th[1].Role != RoleOutsider {
		t.Errorf("fix-add's thread: %+v", th)
	}
}

// TestLoadDefaults fills the limits a case leaves out.
func TestLoadDefaults(t *testing.T) {
	dir := t.TempDir()
	writeCase(t, dir, "one", `{"title": " Do it ", "check": ["true"]}`)
	cases, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := cases[0]
	if c.Title != "Do it" || time.Duration(c.TimeLimit) != defaultLimit || time.Duration(c.CheckLimit) != defaultCheck || c.Snapshot() != filepath.Join(dir, "one", "repo") {
		t.Errorf("%+v", c)
	}
}

// writeCase makes the case folder name in dir with case.json and a
// one-file snapshot.
func writeCase(t *testing.T, dir, name, caseJSON string) string {
	t.Helper()
	c := filepath.Join(dir, name)
	must(t, os.MkdirAll(filepath.Join(c, RepoDir), 0o755))
	must(t, os.WriteFile(filepath.Join(c, RepoDir, "README.md"), []byte("hi\n"), 0o644))
	if caseJSON != "" {
		must(t, os.WriteFile(filepath.Join(c, CaseFile), []byte(caseJSON), 0o644))
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefuses: every corpus a replay cannot honour is refused, the
// error naming the file and what is wrong.
func TestLoadRefuses(t *testing.T) {
	const ok = `{"title": "t", "check": ["true"]}`
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
		want []string
	}{
		{"empty corpus", func(*testing.T, string) {}, []string{"no case"}},
		{"unknown field", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "assignee": "x"}`)
		},
			[]string{"a/case.json", `unknown field "assignee"`}},
		{"no title", func(t *testing.T, d string) { writeCase(t, d, "a", `{"title": "  ", "check": ["true"]}`) }, []string{"a/case.json", "title: missing"}},
		{"no check", func(t *testing.T, d string) { writeCase(t, d, "a", `{"title": "t"}`) }, []string{"a/case.json", "check: missing"}},
		{"empty argv", func(t *testing.T, d string) { writeCase(t, d, "a", `{"title": "t", "check": [""]}`) }, []string{"check: missing"}},
		{"check as a string", func(t *testing.T, d string) { writeCase(t, d, "a", `{"title": "t", "check": "make test"}`) }, []string{"a/case.json", "cannot unmarshal"}},
		{"bad role", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "thread": [{"role": "admin", "body": "x"}]}`)
		}, []string{"thread[0].role", `"admin"`}},
		{"empty comment", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "thread": [{"role": "outsider", "body": " "}]}`)
		}, []string{"thread[0].body: empty"}},
		{"empty label", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "labels": [""]}`)
		}, []string{"labels: an empty label"}},
		{"limit too long", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "time_limit": "3h"}`)
		}, []string{"time_limit: 3h0m0s"}},
		{"limit negative", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "check_limit": "-1s"}`)
		}, []string{"check_limit"}},
		{"limit not a duration", func(t *testing.T, d string) {
			writeCase(t, d, "a", `{"title": "t", "check": ["true"], "time_limit": 600}`)
		}, []string{"a/case.json", "a duration is a string"}},
		{"two values", func(t *testing.T, d string) { writeCase(t, d, "a", ok+ok) }, []string{"more than one JSON value"}},
		{"no case.json", func(t *testing.T, d string) { writeCase(t, d, "a", "") }, []string{"a/case.json"}},
		{"no snapshot", func(t *testing.T, d string) {
			c := writeCase(t, d, "a", ok)
			must(t, os.RemoveAll(filepath.Join(c, RepoDir)))
		}, []string{"a/repo", "must be a folder"}},
		{"empty snapshot", func(t *testing.T, d string) {
			c := writeCase(t, d, "a", ok)
			must(t, os.Remove(filepath.Join(c, RepoDir, "README.md")))
		}, []string{"a/repo", "no file"}},
		{"link in the snapshot", func(t *testing.T, d string) {
			c := writeCase(t, d, "a", ok)
			must(t, os.Symlink("/etc/passwd", filepath.Join(c, RepoDir, "passwd")))
		}, []string{"repo/passwd", "no symbolic link"}},
		{"git in the snapshot", func(t *testing.T, d string) {
			c := writeCase(t, d, "a", ok)
			must(t, os.Mkdir(filepath.Join(c, RepoDir, ".git"), 0o755))
		}, []string{"repo/.git", "not a git repository"}},
		{"bad folder name", func(t *testing.T, d string) { writeCase(t, d, "Bad_Name", ok) }, []string{"Bad_Name", "lower-case"}},
		{"stray file", func(t *testing.T, d string) {
			writeCase(t, d, "a", ok)
			must(t, os.WriteFile(filepath.Join(d, "notes.txt"), nil, 0o644))
		}, []string{"notes.txt is not a case folder"}},
		{"one bad among good", func(t *testing.T, d string) {
			writeCase(t, d, "a", ok)
			writeCase(t, d, "b", `{"title": "t", "check": ["true"], "extra": 1}`)
		}, []string{"b/case.json", `unknown field "extra"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.make(t, dir)
			cases, err := Load(dir)
			if err == nil {
				t.Fatalf("loaded %+v", cases)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestLoadBoundsCaseFile refuses a case.json over its size.
func TestLoadBoundsCaseFile(t *testing.T) {
	dir := t.TempDir()
	writeCase(t, dir, "a", `{"title": "t", "check": ["true"], "body": "`+strings.Repeat("x", maxCaseBytes)+`"}`)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("err %v", err)
	}
}
