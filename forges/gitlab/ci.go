package gitlab

import (
	"context"
	"fmt"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

// CIStatus combines the pipelines GitLab ran for sha, and lists their jobs
// (and any external commit statuses) as the checks. External statuses set
// through the statuses API live in pipelines of their own (source
// "external"), so the pipelines cover them. Only the newest pipeline of each
// ref counts: a branch pipeline and a merge request pipeline
// (refs/merge-requests/N/head) of the same commit are both kept, while a
// pipeline run again for the same ref replaces the older one. The state comes
// from the pipelines, not the jobs, so a job allowed to fail does not fail
// the commit.
//
// State mapping: success is success; failed and canceled are failure (a
// cancelled pipeline did not prove the commit, as GitHub treats a cancelled
// check); created, waiting_for_resource, preparing, pending, running,
// scheduled, waiting_for_callback and manual (waiting on a person to start a
// job) are pending; skipped pipelines and jobs are left out, as if CI had not
// reported, so a commit whose only pipeline was skipped is CINone.
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
	if len(pipelines) == 0 {
		return out, nil
	}
	newest := newestPerRef(pipelines)
	var states []forges.CIState
	for _, pl := range newest {
		if st, counted := pipelineState(pl.Status); counted {
			states = append(states, st)
		}
	}
	out.State = combine(states)

	checks, err := f.statusChecks(ctx, p, sha, newest)
	if err != nil {
		return nil, err
	}
	if len(checks) == 0 {
		checks = pipelineChecks(newest)
	}
	out.Checks = append(out.Checks, checks...)
	return out, nil
}

// newestPerRef keeps the newest pipeline of each ref, in the order the refs
// first appear.
func newestPerRef(pipelines []*gl.PipelineInfo) []*gl.PipelineInfo {
	newest := map[string]*gl.PipelineInfo{}
	var order []string
	for _, pl := range pipelines {
		cur, ok := newest[pl.Ref]
		if !ok {
			order = append(order, pl.Ref)
		}
		if !ok || pl.ID > cur.ID {
			newest[pl.Ref] = pl
		}
	}
	out := make([]*gl.PipelineInfo, 0, len(order))
	for _, ref := range order {
		out = append(out, newest[ref])
	}
	return out
}

// statusChecks lists the commit statuses of sha (its jobs and external
// statuses) as checks, leaving out skipped ones and those of pipelines other
// than kept.
func (f *Forge) statusChecks(ctx context.Context, p forges.Project, sha string, kept []*gl.PipelineInfo) ([]forges.Check, error) {
	statuses, err := collect(func(lo gl.ListOptions) ([]*gl.CommitStatus, *gl.Response, error) {
		return f.client.Commits.GetCommitStatuses(pid(p), sha, &gl.GetCommitStatusesOptions{ListOptions: lo}, gl.WithContext(ctx))
	})
	if err != nil {
		return nil, wrap(err, "list commit statuses of %s in %s", sha, p.FullName())
	}
	keep := make(map[int64]bool, len(kept))
	for _, pl := range kept {
		keep[pl.ID] = true
	}
	var checks []forges.Check
	for _, cs := range statuses {
		st, counted := pipelineState(cs.Status)
		if !counted || (cs.PipelineID != 0 && !keep[cs.PipelineID]) {
			continue
		}
		checks = append(checks, forges.Check{Name: cs.Name, State: st, Description: cs.Description, URL: cs.TargetURL})
	}
	return checks, nil
}

// pipelineChecks lists the pipelines themselves as checks, leaving out
// skipped ones, for a commit with no statuses.
func pipelineChecks(pipelines []*gl.PipelineInfo) []forges.Check {
	var checks []forges.Check
	for _, pl := range pipelines {
		if st, counted := pipelineState(pl.Status); counted {
			checks = append(checks, forges.Check{Name: fmt.Sprintf("pipeline #%d (%s)", pl.ID, pl.Ref), State: st, Description: pl.Status, URL: pl.WebURL})
		}
	}
	return checks
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
