package main

import (
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/config"
)

// TestSecretsListsEverySecretHeld: the engine and the pages hide the same
// values: the forge token, the API key, the OAuth client secret, every
// webhook secret and the secret-named variables offered to the agents.
func TestSecretsListsEverySecretHeld(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-1234")
	t.Setenv("AGENT_LANGUAGE", "fr")
	c := &config.Config{ForgeToken: "tok-1234", APIKey: "api-1234", OAuthClientSecret: "oauth-1234",
		WebhookSecrets: []string{"old-1234", "new-1234"}, AgentEnv: []string{"ANTHROPIC_API_KEY", "AGENT_LANGUAGE"}}
	got := secrets(c)
	for _, want := range []string{"tok-1234", "api-1234", "oauth-1234", "old-1234", "new-1234", "sk-ant-1234"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
	if slices.Contains(got, "fr") || slices.Contains(got, "") {
		t.Errorf("secrets hold a value that is not one: %q", got)
	}
}
