package forgejo

import (
	"net/http"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// corpus is Forgejo's webhook corpus: deliveries recorded from a real Forgejo
// 7.0.16, a real Gitea 1.26 and a real Forgejo 15 (see its README).
const corpus = "../../testdata/forgejo"

// knownParserBugs are real deliveries Parse refuses as malformed (answered
// 400, so the forge marks them failed) where it should ignore them; none
// today. A wiki payload (its comment is text) and a package payload (no
// top-level repository) were, until Parse looked at the event type first.
var knownParserBugs = map[string]string{}

// TestCorpus sweeps every recorded delivery through Parse and the shared
// webhook handler (forgetest.Sweep): normalized as its golden file says, or
// ignored with a reason; never a panic, a 5xx or a refusal but the known
// parser bugs. The recorded signatures are replaced by the sweep's
// (hooks_test.go and record_gitea_test.go check them with the recording's
// secret). Gitea's deliveries have no X-Forgejo-Delivery: the sweep gives them
// a fixed one.
func TestCorpus(t *testing.T) {
	forgetest.Sweep{
		Name:  "forgejo",
		Dir:   corpus,
		Hooks: Hooks{},
		Sign: func(h http.Header, body []byte, secret string) {
			sig := forges.SignHMACSHA256(secret, body)
			h.Set("X-Forgejo-Signature", sig)
			h.Set("X-Gitea-Signature", sig)
		},
		DeliveryHeader: "X-Forgejo-Delivery",
		Malformed:      knownParserBugs,
	}.Run(t)
}
