package gitlab

import (
	"net/http"
	"testing"

	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// corpus is GitLab's webhook corpus: the webhook and system hook examples of
// client-go's testdata, and payloads derived from them (see its README).
const corpus = "../../testdata/gitlab"

// TestCorpus sweeps every payload of the corpus through Parse and the shared
// webhook handler (forgetest.Sweep): normalized as its golden file says, or
// ignored with a reason; never a panic or a 5xx.
func TestCorpus(t *testing.T) {
	forgetest.Sweep{
		Name:  "gitlab",
		Dir:   corpus,
		Hooks: Hooks{},
		Sign: func(h http.Header, _ []byte, secret string) {
			h.Set(HeaderToken, secret)
		},
		DeliveryHeader: HeaderEventUUID,
		Malformed: map[string]string{
			"webhooks/group_merge_request.json": `its keys carry trailing spaces ("iid "): client-go keeps it to test that, GitLab sends no such payload`,
		},
	}.Run(t)
}
