package github

import (
	"net/http"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// corpus is GitHub's webhook corpus: every example payload of octokit/webhooks
// (see its README).
const corpus = "../../testdata/github"

// TestCorpus sweeps every payload of the corpus through Parse and the shared
// webhook handler (forgetest.Sweep): normalized as its golden file says, or
// ignored with a reason; never a panic, a 5xx or a refusal.
func TestCorpus(t *testing.T) {
	forgetest.Sweep{
		Name:  "github",
		Dir:   corpus,
		Hooks: Hooks{},
		Sign: func(h http.Header, body []byte, secret string) {
			h.Set(headerSignature, "sha256="+forges.SignHMACSHA256(secret, body))
		},
		DeliveryHeader: headerDelivery,
		Check:          checkConsistent,
	}.Run(t)
}
