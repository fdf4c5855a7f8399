package bot

import (
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/state"
)

// TestEgressAllowlist: AGENT_EGRESS_ALLOW of a project lets its sealed runs
// reach those hosts through the gateway's proxy, with the run's token, and
// nothing else changes; a value that is no host list is refused when set.
func TestEgressAllowlist(t *testing.T) {
	e, _ := sealingEngine(t, namedRunner("image"), "", "anthropic", "http://127.0.0.1:1")
	a, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	sc := Scope{Forge: "forgejo", Owner: "alice", Project: "demo"}
	plain := sealedSpec(t, "img", a.Descriptor(), nil)
	s, err := e.seal("run-plain", sc, a, &plain)
	if err != nil || s == nil {
		t.Fatalf("seal: %v %v", s, err)
	}
	defer s.Close()
	if _, ok := plain.Env["HTTPS_PROXY"]; ok {
		t.Fatalf("a run without allowed hosts has a proxy: %v", plain.Env)
	}

	o := projectSetting("AGENT_EGRESS_ALLOW", "registry.npmjs.org, *.pythonhosted.org")
	e.settings.Overrides = staticOverrides{o}
	spec := sealedSpec(t, "img", a.Descriptor(), nil)
	s2, err := e.seal("run-allowed", sc, a, &spec)
	if err != nil || s2 == nil {
		t.Fatalf("seal: %v %v", s2, err)
	}
	defer s2.Close()
	proxy := spec.Env["HTTPS_PROXY"]
	if !strings.Contains(proxy, s2.Token()+"@127.0.0.1:") || spec.Env["NO_PROXY"] != "127.0.0.1,localhost" || spec.Network != "none" {
		t.Fatalf("allowed hosts: proxy %q, no_proxy %q, network %q", proxy, spec.Env["NO_PROXY"], spec.Network)
	}
	if err := AgentEgressAllow.definition().Check("registry.npmjs.org, https://evil.example/x"); err == nil {
		t.Fatal("a URL was accepted as an allowed host")
	}
}

// staticOverrides serves fixed setting overrides.
type staticOverrides []state.SettingOverride

func (s staticOverrides) Override(sc Scope, key string) (string, bool) {
	for _, o := range s {
		if o.Key == key && o.Owner == sc.Owner && (o.Project == "" || o.Project == sc.Project) {
			return overrideText(o.Value), true
		}
	}
	return "", false
}
