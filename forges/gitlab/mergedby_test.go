package gitlab

import (
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// TestMergedBy: a merged merge request read from the API names who merged
// it; an open one names nobody.
func TestMergedBy(t *testing.T) {
	if got := mergeRequest(&gl.BasicMergeRequest{IID: 2, State: "merged", MergedBy: &gl.BasicUser{Username: "alice"}}); got.MergedBy != "alice" {
		t.Errorf("merged: merged by %q", got.MergedBy)
	}
	if got := mergeRequest(&gl.BasicMergeRequest{IID: 3, State: "opened"}); got.MergedBy != "" {
		t.Errorf("open: merged by %q", got.MergedBy)
	}
}
