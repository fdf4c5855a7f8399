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
//				MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, // fast retry tests
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
// Rules the fakes follow so that one suite fits all three forges:
//
//   - There is one project, Harness.Project(), whose default branch and clone URL
//     are in Harness.Want(). The bot's account is Want().BotLogin and the Forge
//     under test authenticates as it; Me and the author of what the Forge
//     creates is that login.
//   - Seed* write the fake's state directly, never through the Forge under
//     test. They create any user, label or branch they name that does not exist
//     yet (a user created that way has read access). Numbers given to
//     SeedIssue and SeedMergeRequest are kept; the suite uses issue numbers
//     below 20 and merge request numbers from 20 up, so forges where pull
//     requests and issues share numbers (Forgejo, GitHub) have no clash.
//     CreateMergeRequest on the fake picks a number above every seeded one.
//   - The fake answers like the real API: status codes, error bodies, JSON
//     shapes and pagination headers of the recorded responses, with pages small
//     enough (at most 50 items) that 120 comments or 60 labels take several
//     pages where the real forge pages them.
//   - FailNext makes the next n API requests (whatever they are) answer status
//     without touching state, with the headers the real forge sends with that
//     status (Retry-After: 0 or 1 for 429, rate-limit headers, ...). Hang makes
//     the next n requests wait until the client gives up. Build the Forge with a
//     short back-off (milliseconds) so retries keep the suite fast.
//   - Timestamps: SeedComment and SeedReviewComment keep the order of seeding;
//     ReviewComments compares the CreatedAt given to SeedReviewComment.
package forgetest

import (
	"testing"

	"github.com/alchemic-studio/alfred/forges"
)

// Want is what the fake is set up to answer for the project and the bot.
type Want struct {
	BotLogin      string // forges.Forge.Me().Login
	DefaultBranch string
	CloneURL      string // forges.Forge.CloneURL
	GitUsername   string // forges.Forge.GitCredentials
	GitPassword   string
}

// Harness is one implementation under test wired to a fresh fake forge.
type Harness interface {
	// Forge is the implementation under test, talking to the fake.
	Forge() forges.Forge
	// Project is the fake's one project (Forge field as configured, may be empty).
	Project() forges.Project
	// Want says what the fake answers for the bot and the project.
	Want() Want

	// SeedIssue creates issue is.Number with its title, body, state ("" is
	// open), author, labels and assignees.
	SeedIssue(t testing.TB, is forges.Issue)
	// SeedUser makes login a user with permission p on the project (PermissionAdmin
	// is the owner or an admin, PermissionNone a user with no access at all).
	SeedUser(t testing.TB, login string, p forges.Permission)
	// SeedBranch creates branch name pointing at sha.
	SeedBranch(t testing.TB, name, sha string)
	// SeedMergeRequest creates merge request mr.Number with its title, body,
	// state (open, closed or merged), author, branches, head SHA and Mergeable
	// (clean or conflict). It creates the source branch at HeadSHA if missing.
	SeedMergeRequest(t testing.TB, mr forges.MergeRequest)
	// SeedComment posts a comment by author on the issue or merge request
	// thread of tg and returns its id.
	SeedComment(t testing.TB, tg forges.Target, author, body string) int64
	// SeedCI records checks for commit sha (commit statuses, check runs or
	// pipeline jobs, whatever the forge reports CI with), each with its state.
	SeedCI(t testing.TB, sha string, checks []forges.Check)
	// SeedReviewComment adds a submitted review comment on merge request mr:
	// an inline comment when c.Path is set, else a review body. c.ID is ignored.
	SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment)

	// FailNext makes the next n API requests answer status (5xx, 429) untouched.
	FailNext(t testing.TB, status, n int)
	// Hang makes the next n API requests wait until the client gives up.
	Hang(t testing.TB, n int)

	// IssueBody is the stored description of issue number.
	IssueBody(t testing.TB, number int64) string
	// TargetLabels are the label names on an issue or merge request, any order.
	TargetLabels(t testing.TB, tg forges.Target) []string
}

// NewHarness starts a fresh fake and the implementation under test for one subtest.
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
	{"PersistentServerError", testPersistentServerError},
	{"ContextDeadline", testContextDeadline},
	{"EnsureComment", testEnsureComment},
	{"EnsureSection", testEnsureSection},
	{"SyncLabels", testSyncLabels},
}
