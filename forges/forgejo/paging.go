package forgejo

import (
	"cmp"
	"slices"
	"strconv"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
)

// pageSize is Forgejo's default MAX_RESPONSE_ITEMS: asking for more gets 50.
const pageSize = 50

// maxPages bounds a listing, against a server that pages forever.
const maxPages = 1000

// collect reads every page of a listing. Forgejo 7 pages unevenly: some
// endpoints send Link and X-Total-Count, some X-Total-Count alone, and
// /issues/{n}/comments ignores paging and answers everything on each page; a
// server's MAX_RESPONSE_ITEMS may also be below the page size asked for. So
// it stops at an empty page or one that brings nothing new (by id); else when
// X-Total-Count items are read; else, with a Link header, when it names no
// next page; else at a page shorter than asked.
func collect[T any](fetch func(page int) ([]T, *gitea.Response, error), id func(T) int64) ([]T, error) {
	var all []T
	seen := map[int64]bool{}
	for page := 1; page <= maxPages; page++ {
		items, resp, err := fetch(page)
		if err != nil {
			return nil, apiErr(resp, err)
		}
		fresh := 0
		for _, it := range items {
			if k := id(it); !seen[k] {
				seen[k] = true
				all = append(all, it)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
		if !morePages(resp, len(all), len(items)) {
			break
		}
	}
	return all, nil
}

func morePages(resp *gitea.Response, read, onPage int) bool {
	if resp == nil || resp.Response == nil {
		return onPage >= pageSize
	}
	if total, err := strconv.Atoi(resp.Header.Get("X-Total-Count")); err == nil {
		return read < total
	}
	if resp.Header.Get("Link") != "" {
		return resp.NextPage != 0
	}
	return onPage >= pageSize
}

func sortReviewComments(cs []forges.ReviewComment) {
	slices.SortStableFunc(cs, func(a, b forges.ReviewComment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
