package run

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// Seal is how runs are sealed behind the model gateway (issue 21). A
// run on the default AGENT_NETWORK none of an adapter that can run sealed
// (agents.Descriptor.Sealed) whose provider the gateway serves gets a gateway
// session of its own, a container with no network, the session's socket at
// gateway.ContainerSocket, the forwarder in front of its CLI, and the run's
// token where the CLI expects its key. The provider's key stays in the bot.
type Seal struct {
	Gateway *gateway.Gateway
	// Forwarder is a static alfred-forward on the Docker daemon's host,
	// bind-mounted read-only at ForwarderPath; empty: the image's own
	// alfred-forward, found on its PATH.
	Forwarder string
	// Withheld are the offered variables the gateway took over (the
	// served providers' keys and endpoints), left out of the base spec: a
	// run on a network chosen by its project (unsealed) gets them back.
	Withheld map[string]string
}

// ForwarderPath is where Seal.Forwarder is mounted in a sealed container.
const ForwarderPath = "/run/alfred/alfred-forward"

// maxRecordedRefusals bounds the refusals a run record keeps (the total is
// kept too).
const maxRecordedRefusals = 100

// seal turns spec into a sealed run's spec and returns the run's gateway
// session. It returns nil and leaves the run unsealed without a gateway,
// off the image runner, for an adapter that runs in the bot, and on a
// network the project chose (the withheld keys then go into spec, as
// before the gateway: the risk its project took). On network none, an
// adapter that cannot run sealed is an error that says how to fix it: its
// CLI would reach no model. The caller closes the session with Unseal.
// settings are the project's (AGENT_EGRESS_ALLOW, AGENT_PROVIDER,
// AGENT_MODEL).
func (r *Runner) Seal(runID string, settings Settings, adapter agents.Adapter, spec *sandbox.Spec) (*gateway.Session, error) {
	l, ok := adapter.(interface{ Descriptor() agents.Descriptor }) // the local CLIs
	if !ok || r.Sealing == nil || r.Sealing.Gateway == nil || !sandbox.InContainer(r.Sandbox.Name()) {
		return nil, nil
	}
	if spec.Network != "none" {
		env := cloneMap(spec.Env)
		maps.Copy(env, r.Sealing.Withheld)
		spec.Env = env
		return nil, nil
	}
	sd := l.Descriptor().Sealed
	if sd != nil { // Copilot: its GitHub sign-in, else BYOK, unless the run asks for a provider
		served := r.Sealing.Gateway.Served()
		if w := sd.Calling(runProvider(settings.Provider, settings.Model)); w != nil && w.Missing(served) == "" {
			sd = w
		} else {
			sd = sd.For(served)
		}
	}
	if err := r.sealable(adapter.ID(), sd, settings); err != nil {
		return nil, err
	}
	allow := settings.EgressAllow
	s, err := r.Sealing.Gateway.Open(runID, allow...)
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	env := cloneMap(spec.Env)
	for _, k := range sd.Credentials {
		delete(env, k) // the gateway holds them
	}
	maps.Copy(env, sd.Env(sd.BaseURL(gateway.DefaultForwardPort), s.Token()))
	if len(allow) > 0 { // the project's hosts, through the gateway's proxy with the run's token
		proxy := fmt.Sprintf("http://agent:%s@127.0.0.1:%d", s.Token(), gateway.DefaultForwardPort)
		maps.Copy(env, map[string]string{"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
			"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
	}
	spec.Env = env
	spec.Credentials = nil // the gateway holds the credentials; the CLI's configuration comes with HomeFiles
	spec.Network = "none"
	spec.Binds = append(slices.Clone(spec.Binds), sandbox.Mount{Host: s.SocketPath(), Container: gateway.ContainerSocket})
	if sd.Proxy { // the gateway's certificate authority, which the CLI trusts; its key stays in the bot
		spec.Binds = append(spec.Binds, sandbox.Mount{Host: s.CAPath(), Container: gateway.ContainerCA, ReadOnly: true})
	}
	fwd := "alfred-forward"
	if f := r.Sealing.Forwarder; f != "" {
		fwd = ForwarderPath
		spec.Binds = append(spec.Binds, sandbox.Mount{Host: f, Container: ForwarderPath, ReadOnly: true})
	}
	spec.Prefix = []string{fwd, "-port", strconv.Itoa(gateway.DefaultForwardPort), "-socket", gateway.ContainerSocket, "--"}
	r.Log.Info("run sealed", "run", runID, "provider", sd.Provider)
	return s, nil
}

// ErrUnsealable is a run on AGENT_NETWORK none whose CLI cannot run behind
// the gateway: with no network it would reach no model.
var ErrUnsealable = errors.New("cannot run sealed")

// sealable says why adapter (its Sealed descriptor sd) cannot run sealed
// with the project's settings, in a sentence a person can act on, or nil.
func (r *Runner) sealable(id string, sd *agents.Sealed, settings Settings) error {
	unsealed := "or set AGENT_NETWORK to a Docker network (e.g. bridge) to run it unsealed, its key in the container"
	if sd == nil {
		return fmt.Errorf("%s %w: it has no way to reach its model through Alfred's gateway; choose another AGENT_ADAPTER, %s", id, ErrUnsealable, unsealed)
	}
	if why := sd.Missing(r.Sealing.Gateway.Served()); why != "" {
		return fmt.Errorf("%s %w: %s, %s", id, ErrUnsealable, why, unsealed)
	}
	if p := runProvider(settings.Provider, settings.Model); p != "" && p != sd.Provider {
		return fmt.Errorf("%s %w with provider %s: sealed, it calls %s; set AGENT_PROVIDER and AGENT_MODEL to a %s model, %s", id, ErrUnsealable, p, sd.Provider, sd.Provider, unsealed)
	}
	return nil
}

// runProvider is the provider a run asks for: AGENT_PROVIDER, else the
// provider a "provider/model" AGENT_MODEL names; empty: the CLI's own.
func runProvider(provider, model string) string {
	if provider != "" {
		return provider
	}
	if p, _, ok := strings.Cut(model, "/"); ok {
		if _, known := gateway.ProviderNamed(p, "", ""); known {
			return p
		}
	}
	return ""
}

// Unseal closes a sealed run's gateway session (its token stops working)
// and records what the gateway saw on the run.
func (r *Runner) Unseal(s *gateway.Session, run *state.Run) {
	if err := s.Close(); err != nil {
		r.Log.Warn("close the run's gateway session", "run", run.ID, "err", err)
	}
	u := s.Usage()
	g := &state.RunGateway{Requests: u.Requests, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, RefusedTotal: s.RefusedTotal()}
	for _, refusal := range s.Refused() {
		if len(g.Refused) == maxRecordedRefusals {
			break
		}
		g.Refused = append(g.Refused, r.redact(refusal.String()))
	}
	run.Gateway = g
}
