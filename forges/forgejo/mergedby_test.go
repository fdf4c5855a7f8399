package forgejo

import (
	"testing"

	"code.gitea.io/sdk/gitea"
)

// TestMergedBy: a merged pull request read from the API names who merged
// it; an open one names nobody.
func TestMergedBy(t *testing.T) {
	if got := toMergeRequest(&gitea.PullRequest{Index: 2, HasMerged: true, MergedBy: &gitea.User{UserName: "alice"}}); got.MergedBy != "alice" {
		t.Errorf("merged: merged by %q", got.MergedBy)
	}
	if got := toMergeRequest(&gitea.PullRequest{Index: 3, State: gitea.StateOpen}); got.MergedBy != "" {
		t.Errorf("open: merged by %q", got.MergedBy)
	}
}
