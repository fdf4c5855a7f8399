package gitlab

import (
	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// collect reads every page of an offset-paginated listing. It follows
// X-Next-Page, falls back to X-Total-Pages when a proxy strips the former
// (GitLab itself omits X-Total-Pages on very large listings), and stops
// when neither points forward or after maxPages.
func collect[T any](fetch func(opt gl.ListOptions) ([]T, *gl.Response, error)) ([]T, error) {
	var all []T
	page := int64(1)
	for range maxPages {
		items, resp, err := fetch(gl.ListOptions{Page: page, PerPage: perPage})
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		next := nextPage(resp, page)
		if next <= page {
			return all, nil
		}
		page = next
	}
	return all, nil
}

func nextPage(resp *gl.Response, page int64) int64 {
	if resp == nil {
		return 0
	}
	if resp.NextPage > 0 {
		return resp.NextPage
	}
	if resp.TotalPages > page {
		return page + 1
	}
	return 0
}
