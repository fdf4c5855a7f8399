// Package forgetest is the one contract test suite every forges.Forge
// implementation runs: the same code for Forgejo/Gitea, GitHub and GitLab, each
// implementation talking over HTTP to its own httptest fake of the forge's API.
//
// An implementation hooks in from its own _test.go with a constructor that
// starts a fresh fake (one per subtest, so subtests never share state) and
// returns a Harness that can seed and inspect the fake directly:
//
//	func TestContract(t *testing.T) {
//		forgetest.Run(t, func(t *testing.T) forgetest.Harness {
//			srv := forgejotest.NewServer(t) // stateful fake Forgejo API, closed by t.Cleanup
//			f, err := forgejo.New(forgejo.Options{
//				BaseURL: srv.URL(), Token: forgejotest.BotToken,
//				Retry: forges.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, // fast retries
//			})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return &harness{srv: srv, forge: f} // adapts srv's seeding methods to Harness
//		})
//	}
//
// forges/forgejo/contract_test.go is the complete example.
//
// The same suite also runs against a real Gitea (forges/forgejo's
// TestContractRealForges, a fresh repository per subtest), so the Harness asks
// only what a real forge can do, and the cases use what the seeds return:
//
//   - There is one project, Harness.Project(), whose default branch and clone URL
//     are in Harness.Want(). The bot's account is Want().BotLogin and the Forge
//     under test authenticates as it; Me and the author of what the Forge
//     creates is that login.
//   - Seed* act directly on the forge, never through the Forge under test. They
//     create any user, label or branch they name that does not exist yet (a
//     user created that way has read access).
//   - Numbers: a real forge numbers issues and merge requests itself (Gitea from
//     one counter per repository for both). SeedIssue and SeedMergeRequest take
//     the number the suite would like and return the one to use: the fakes keep
//     the number they are given (the suite asks for issue numbers below 20 and
//     merge request numbers from 20 up, so forges where pull requests and
//     issues share numbers have no clash); a real forge returns its own.
//     CreateMergeRequest on a fake picks a number above every seeded one.
//   - Commits: a real forge keeps statuses and merge requests only for commits
//     it has. SeedBranch makes a branch with a commit of its own and returns its
//     SHA (a fake makes one up with FakeSHA), SeedMergeRequest returns the head
//     SHA it made, and SeedCI is given one of those SHAs.
//   - Mergeability: a real forge checks it in the background. SeedMergeRequest
//     returns an open merge request once the forge has settled it as asked:
//     MergeableClean, or MergeableConflict made by a real conflict (the source
//     and the target branch edit the same line); MergeableUnknown means the
//     suite does not look at it, and the seed does not wait. Seeding a merged
//     merge request moves the target branch, which makes a real forge check
//     every open merge request again: the cases seed merged ones first. A
//     merged merge request's source branch is deleted, as merges usually have
//     it, where the forge's API lets it matter (not on GitLab's fake, where
//     the merge request keeps naming it anyway).
//   - Time: a real forge stamps what is created with its own clock, to the
//     second. SeedReviewComment returns the CreatedAt the forge stored (the
//     fakes keep the one given, a real forge returns its own, seeding each
//     comment in a later second than the one before), and the cases compare
//     with what it returned.
//   - The fakes answer like the real API: status codes, error bodies, JSON
//     shapes and pagination headers of the recorded responses, with pages small
//     enough (at most 50 items) that 120 comments or 60 labels take several
//     pages where the real forge pages them.
//   - FailNext makes the next n API requests (whatever they are) answer status
//     without touching state, with the headers the real forge sends with that
//     status (Retry-After: 0 or 1 for 429, rate-limit headers, ...). Hang makes
//     the next n requests wait until the client gives up. A real forge gets
//     them from a reverse proxy in front of it. Build the Forge with a short
//     back-off (milliseconds) so retries keep the suite fast.
package forgetest

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// Want is what the forge is set up to answer for the project and the bot.
type Want struct {
	BotLogin      string // forges.Forge.Me().Login
	DefaultBranch string
	CloneURL      string // forges.Forge.CloneURL
	GitUsername   string // forges.Forge.GitCredentials
	GitPassword   string
}

// Harness is one implementation under test wired to a fresh fake forge, or to
// a fresh repository of a real one.
type Harness interface {
	// Forge is the implementation under test, talking to the forge.
	Forge() forges.Forge
	// Project is the one project (Forge field as configured, may be empty).
	Project() forges.Project
	// Want says what the forge answers for the bot and the project.
	Want() Want

	// SeedIssue creates an issue with is's title, body, state ("" is open),
	// author, labels and assignees, and returns its number: is.Number on a
	// fake, the forge's own number on a real forge.
	SeedIssue(t testing.TB, is forges.Issue) int64
	// SeedUser makes login a user with permission p on the project (PermissionAdmin
	// is the owner or an admin, PermissionNone a user with no access at all).
	SeedUser(t testing.TB, login string, p forges.Permission)
	// SeedBranch creates branch name off the default branch with a commit of its
	// own and returns the SHA the branch points at.
	SeedBranch(t testing.TB, name string) string
	// SeedMergeRequest creates a merge request with mr's title, body, state
	// (open, closed or merged), author, branches and Mergeable, and returns it
	// with its number and head SHA (mr.HeadSHA is ignored). It creates the source
	// branch with a commit of its own; an open merge request is returned once
	// its mergeability is settled as asked (see the package comment).
	SeedMergeRequest(t testing.TB, mr forges.MergeRequest) forges.MergeRequest
	// SeedComment posts a comment by author on the issue or merge request
	// thread of tg and returns its id.
	SeedComment(t testing.TB, tg forges.Target, author, body string) int64
	// SeedCI records checks for commit sha, made by SeedBranch or
	// SeedMergeRequest (commit statuses, check runs or pipeline jobs, whatever
	// the forge reports CI with), each with its state.
	SeedCI(t testing.TB, sha string, checks []forges.Check)
	// SeedReviewComment adds a submitted review comment on merge request mr: an
	// inline comment when c.Path is set, else a review body. c.ID is ignored. It
	// returns the CreatedAt the forge stored: c.CreatedAt on a fake, the
	// forge's clock on a real forge, later than any comment seeded before.
	SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) time.Time

	// FailNext makes the next n API requests answer status (5xx, 429) untouched.
	FailNext(t testing.TB, status, n int)
	// Hang makes the next n API requests wait until the client gives up.
	Hang(t testing.TB, n int)

	// IssueBody is the stored description of issue number.
	IssueBody(t testing.TB, number int64) string
	// TargetLabels are the label names on an issue or merge request, any order.
	TargetLabels(t testing.TB, tg forges.Target) []string
}

// FakeSHA is the commit SHA a fake forge gives branch name: the same for the
// same name, different for different names.
func FakeSHA(name string) string {
	sum := sha1.Sum([]byte(name))
	return hex.EncodeToString(sum[:])
}

// NewHarness starts a fresh fake (or repository) and the implementation under
// test for one subtest.
type NewHarness func(t *testing.T) Harness

// Run runs the whole contract suite; every subtest gets its own Harness.
func Run(t *testing.T, newHarness NewHarness) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t)) })
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

var cases = []testCase{
	{"Identity", testIdentity},
	{"Permission", testPermission},
	{"Issue", testIssue},
	{"NotFound", testNotFound},
	{"SetIssueBody", testSetIssueBody},
	{"CommentsPaginated", testCommentsPaginated},
	{"CreateAndEditComment", testCreateAndEditComment},
	{"MergeRequestComments", testMergeRequestComments},
	{"LabelsCreateUpdateList", testLabels},
	{"AddRemoveLabels", testAddRemoveLabels},
	{"MergeRequest", testMergeRequest},
	{"MergeRequestForBranch", testMergeRequestForBranch},
	{"CreateMergeRequest", testCreateMergeRequest},
	{"CIStatus", testCIStatus},
	{"ReviewComments", testReviewComments},
	{"BranchExists", testBranchExists},
	{"RetryTransient", testRetryTransient},
	{"RefusalsAreFinal", testRefusalsAreFinal},
	{"PersistentServerError", testPersistentServerError},
	{"ContextDeadline", testContextDeadline},
	{"EnsureComment", testEnsureComment},
	{"EnsureSection", testEnsureSection},
	{"SyncLabels", testSyncLabels},
}
