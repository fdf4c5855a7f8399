package forgejo

import (
	"net/http"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// corpus is Forgejo's webhook corpus: deliveries recorded from a real Forgejo
// 7.0.16 (see its README).
const corpus = "../../testdata/forgejo"

// TestCorpus sweeps every recorded delivery through Parse and the shared
// webhook handler (forgetest.Sweep): normalized as its golden file says, or
// ignored with a reason; never a panic, a 5xx or a refusal. The recorded
// signatures are replaced by the sweep's (hooks_test.go checks them with the
// recording's secret).
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
	}.Run(t)
}
