package gitlab

import (
	"context"
	"fmt"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

// CIStatus combines the pipelines GitLab ran for sha. External commit statuses
// (set through the statuses API) live in pipelines of their own (source
// "external"), so pipelines cover them. Only the newest pipeline of each ref
// counts: a branch pipeline and a merge request pipeline
// (refs/merge-requests/N/head) of the same commit are both kept, while a
// pipeline run again for the same ref replaces the older one.
//
// State mapping: success is success; failed and canceled are failure (a
// cancelled pipeline did not prove the commit, as GitHub treats a cancelled
// check); created, waiting_for_resource, preparing, pending, running,
// scheduled, waiting_for_callback and manual (waiting on a person to start a
// job) are pending; skipped pipelines are left out, as if CI had not reported,
// so a commit whose only pipeline was skipped is CINone.
func (f *Forge) CIStatus(ctx context.Context, p forges.Project, sha string) (*forges.CIStatus, error) {
	pipelines, err := collect(func(lo gl.ListOptions) ([]*gl.PipelineInfo, *gl.Response, error) {
		return f.client.Pipelines.ListProjectPipelines(pid(p), &gl.ListProjectPipelinesOptions{
			ListOptions: lo,
			SHA:         gl.Ptr(sha),
			OrderBy:     gl.Ptr("id"),
			Sort:        gl.Ptr("desc"),
		}, gl.WithContext(ctx))
	})
	if err != nil {
		return nil, wrap(err, "list pipelines of %s in %s", sha, p.FullName())
	}
	out := &forges.CIStatus{SHA: sha, State: forges.CINone, Checks: []forges.Check{}}
	newest := map[string]*gl.PipelineInfo{}
	var order []string
	for _, pl := range pipelines {
		if pl.SHA != "" && pl.SHA != sha {
			continue
		}
		if cur, ok := newest[pl.Ref]; ok {
			if pl.ID > cur.ID {
				newest[pl.Ref] = pl
			}
			continue
		}
		newest[pl.Ref] = pl
		order = append(order, pl.Ref)
	}
	var states []forges.CIState
	for _, ref := range order {
		pl := newest[ref]
		st, counted := pipelineState(pl.Status)
		if !counted {
			continue
		}
		name := pl.Name
		if name == "" {
			name = fmt.Sprintf("pipeline #%d (%s)", pl.ID, pl.Ref)
		}
		out.Checks = append(out.Checks, forges.Check{Name: name, State: st, Description: pl.Status, URL: pl.WebURL})
		states = append(states, st)
	}
	out.State = combine(states)
	return out, nil
}

// pipelineState maps a pipeline or job status; counted is false for skipped.
func pipelineState(status string) (state forges.CIState, counted bool) {
	switch status {
	case "success":
		return forges.CISuccess, true
	case "failed", "canceled", "canceling":
		return forges.CIFailure, true
	case "skipped":
		return forges.CINone, false
	default:
		return forges.CIPending, true
	}
}

// combine is failure if any failed, else pending if any runs, else success
// if any succeeded, else none.
func combine(states []forges.CIState) forges.CIState {
	out := forges.CINone
	for _, s := range states {
		switch {
		case s == forges.CIFailure:
			return forges.CIFailure
		case s == forges.CIPending:
			out = forges.CIPending
		case s == forges.CISuccess && out == forges.CINone:
			out = forges.CISuccess
		}
	}
	return out
}
