package github

import (
	"testing"

	gh "github.com/google/go-github/v93/github"
)

// TestMergedBy: a merged pull request read from the API names who merged
// it; an open one names nobody.
func TestMergedBy(t *testing.T) {
	merged := &gh.PullRequest{Number: gh.Ptr(2), Merged: gh.Ptr(true), MergedBy: &gh.User{Login: gh.Ptr("alice")}}
	if got := toMergeRequest(merged); got.MergedBy != "alice" {
		t.Errorf("merged: merged by %q", got.MergedBy)
	}
	open := &gh.PullRequest{Number: gh.Ptr(3), State: gh.Ptr("open")}
	if got := toMergeRequest(open); got.MergedBy != "" {
		t.Errorf("open: merged by %q", got.MergedBy)
	}
}
