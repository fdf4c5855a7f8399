package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/gitcmd"
)

// BenchmarkChangeBlobs reads the blobs of a 200-file change for the
// safe-output checks: one git cat-file --batch (what checkChange does)
// beside one git process per file (what it did), in the same run.
func BenchmarkChangeBlobs(b *testing.B) {
	g := newGitForge(b, "alfred", "tok-s3cret")
	g.seed(b, "alice", "demo")
	ctx := context.Background()
	repos := &Repos{Base: b.TempDir(), Name: "Alfred", Email: "alfred@example.invalid"}
	remote := Remote{URL: g.srv.URL + "/alice/demo.git", Username: "alfred", Password: "tok-s3cret"}
	p := forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}
	if _, err := repos.Fetch(ctx, p, remote); err != nil {
		b.Fatal(err)
	}
	wt, err := repos.Checkout(ctx, p, remote, "run-bench", "agent/issue-7-x", "main", true)
	if err != nil {
		b.Fatal(err)
	}
	defer wt.Remove()
	for i := range 200 {
		os.WriteFile(filepath.Join(wt.Dir, fmt.Sprintf("f%03d.go", i)), []byte(fmt.Sprintf("package demo\n\nconst x%d = %d\n", i, i)), 0o644)
	}
	ch, err := wt.Stage(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var shas []string
	for _, f := range ch.Files {
		shas = append(shas, f.NewBlob)
	}
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			if err := wt.blobs(ctx, shas, maxScanBytes, func(string, []byte) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("process-per-file", func(b *testing.B) {
		for b.Loop() {
			for _, sha := range shas {
				if _, err := gitcmd.Run(ctx, wt.privateCmd(), "cat-file", "blob", sha); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
