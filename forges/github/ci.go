package github

import (
	"cmp"
	"context"

	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

// CIStatus combines the commit statuses (GET /commits/{sha}/status, the latest
// per context) and the check runs (GET /commits/{sha}/check-runs, the latest
// per name) of a commit: any failure makes it a failure, else any pending
// makes it pending, else success; nothing reported is CINone.
func (f *Forge) CIStatus(ctx context.Context, p forges.Project, sha string) (*forges.CIStatus, error) {
	out := &forges.CIStatus{SHA: sha}

	sopts := &gh.ListOptions{PerPage: f.perPage}
	for {
		combined, resp, err := f.client.Repositories.GetCombinedStatus(ctx, p.Owner, p.Name, sha, sopts)
		if err != nil {
			return nil, wrap(err, "read commit statuses of %s in %s", sha, p.FullName())
		}
		for _, s := range combined.Statuses {
			out.Checks = append(out.Checks, forges.Check{
				Name:        s.GetContext(),
				State:       statusState(s.GetState()),
				Description: s.GetDescription(),
				URL:         s.GetTargetURL(),
			})
		}
		if resp.NextPage == 0 {
			break
		}
		sopts.Page = resp.NextPage
	}

	copts := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: f.perPage}}
	for {
		runs, resp, err := f.client.Checks.ListCheckRunsForRef(ctx, p.Owner, p.Name, sha, copts)
		if err != nil {
			return nil, wrap(err, "read check runs of %s in %s", sha, p.FullName())
		}
		for _, r := range runs.CheckRuns {
			out.Checks = append(out.Checks, forges.Check{
				Name:        r.GetName(),
				State:       checkRunState(r.GetStatus(), r.GetConclusion()),
				Description: r.GetOutput().GetTitle(),
				URL:         cmp.Or(r.GetHTMLURL(), r.GetDetailsURL()),
			})
		}
		if resp.NextPage == 0 {
			break
		}
		copts.Page = resp.NextPage
	}

	out.State = forges.Combine(out.Checks)
	return out, nil
}

// statusState maps a commit status state (error, failure, pending, success).
func statusState(s string) forges.CIState {
	switch s {
	case "success":
		return forges.CISuccess
	case "failure", "error":
		return forges.CIFailure
	default:
		return forges.CIPending
	}
}

// checkRunState maps a check run's status and conclusion. Neutral and skipped
// pass; stale (GitHub gave up waiting for it) stays pending, like queued and
// in-progress runs; every other conclusion fails.
func checkRunState(status, conclusion string) forges.CIState {
	if status != "completed" {
		return forges.CIPending
	}
	switch conclusion {
	case "success", "neutral", "skipped":
		return forges.CISuccess
	case "stale", "":
		return forges.CIPending
	default: // failure, cancelled, timed_out, action_required, startup_failure
		return forges.CIFailure
	}
}
