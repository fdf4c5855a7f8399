package forges

import (
	"context"
	"slices"
)

// Webhook is a webhook of a project as the forge lists it.
type Webhook struct {
	URL    string
	Events []string // in the forge's own spelling; "*" is every event
	Active bool
	// HasSecret says whether the hook has a secret, when SecretKnown. No forge
	// lets a token read the secret itself.
	HasSecret   bool
	SecretKnown bool
}

// MissingEvents lists the events of want that h does not send.
func (h Webhook) MissingEvents(want []string) []string {
	if slices.Contains(h.Events, "*") {
		return nil
	}
	var out []string
	for _, e := range want {
		if !slices.Contains(h.Events, e) {
			out = append(out, e)
		}
	}
	return out
}

// The areas of a project the bot's token must reach.
const (
	AreaIssues          = "issues"
	AreaPullRequests    = "pull requests"
	AreaRepositoryWrite = "repository write"
	AreaWebhooksRead    = "webhooks read"
)

// Areas lists the areas in the order they are checked.
func Areas() []string {
	return []string{AreaIssues, AreaPullRequests, AreaRepositoryWrite, AreaWebhooksRead}
}

// Access is whether the token reaches one area of a project. Known is false
// when the forge cannot tell (OK is then the best guess and Detail says why).
type Access struct {
	Area   string
	OK     bool
	Known  bool
	Detail string
}

// Inspector is what `alfred doctor` asks a forge beyond Forge: the webhooks
// of a project and what the bot's token may do there.
type Inspector interface {
	// Webhooks lists the project's webhooks.
	Webhooks(ctx context.Context, p Project) ([]Webhook, error)
	// WebhookEvents are the events Alfred needs, in the forge's spelling.
	WebhookEvents() []string
	// TokenAccess says, for each of Areas, whether the token reaches it on p.
	TokenAccess(ctx context.Context, p Project) ([]Access, error)
}
