package bot

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// Seal is how the engine seals runs behind the model gateway (issue 21): a
// run of an adapter that can run sealed (agents.Descriptor.Sealed) whose
// provider the gateway serves gets a gateway session of its own, a container
// with no network, the session's socket at gateway.ContainerSocket, the
// forwarder in front of its CLI, and the run's token where the CLI expects
// its key. The provider's key stays in the bot.
type Seal struct {
	Gateway *gateway.Gateway
	// Forwarder is a static alfred-forward on the Docker daemon's host,
	// bind-mounted read-only at ForwarderPath; empty: the image's own
	// alfred-forward, found on its PATH.
	Forwarder string
}

// ForwarderPath is where Seal.Forwarder is mounted in a sealed container.
const ForwarderPath = "/run/alfred/alfred-forward"

// maxRecordedRefusals bounds the refusals a run record keeps (the total is
// kept too).
const maxRecordedRefusals = 100

// seal turns spec into a sealed run's spec and returns the run's gateway
// session, or nil (spec unchanged) when the run is not sealed: no gateway,
// not the image runner, an adapter that cannot run sealed, or a provider the
// gateway does not serve. The caller closes the session with unseal.
func (e *Engine) seal(runID string, scope Scope, adapter agents.Adapter, spec *sandbox.Spec) (*gateway.Session, error) {
	if e.cfg.Seal == nil || e.cfg.Seal.Gateway == nil || e.cfg.Runner.Name() != "image" {
		return nil, nil
	}
	l, ok := adapter.(interface{ Descriptor() agents.Descriptor }) // the local CLIs
	if !ok {
		return nil, nil
	}
	sd := l.Descriptor().Sealed
	if sd == nil || !slices.Contains(e.cfg.Seal.Gateway.Providers(), sd.Provider) {
		return nil, nil
	}
	allow := splitHosts(AgentEgressAllow.Get(e.settings, scope))
	s, err := e.cfg.Seal.Gateway.Open(runID, allow...)
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	env := cloneMap(spec.Env)
	for _, k := range sd.Credentials {
		delete(env, k) // the gateway holds them
	}
	maps.Copy(env, sd.Env(fmt.Sprintf("http://127.0.0.1:%d/%s", gateway.DefaultForwardPort, sd.Provider), s.Token()))
	if len(allow) > 0 { // the project's hosts, through the gateway's proxy with the run's token
		proxy := fmt.Sprintf("http://agent:%s@127.0.0.1:%d", s.Token(), gateway.DefaultForwardPort)
		maps.Copy(env, map[string]string{"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
			"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
	}
	spec.Env = env
	spec.Network = "none"
	spec.Binds = append(slices.Clone(spec.Binds), sandbox.Mount{Host: s.SocketPath(), Container: gateway.ContainerSocket})
	fwd := "alfred-forward"
	if f := e.cfg.Seal.Forwarder; f != "" {
		fwd = ForwarderPath
		spec.Binds = append(spec.Binds, sandbox.Mount{Host: f, Container: ForwarderPath, ReadOnly: true})
	}
	spec.Prefix = []string{fwd, "-port", strconv.Itoa(gateway.DefaultForwardPort), "-socket", gateway.ContainerSocket, "--"}
	e.log.Info("run sealed", "run", runID, "provider", sd.Provider)
	return s, nil
}

// unseal closes a sealed run's gateway session (its token stops working)
// and records what the gateway saw on the run.
func (e *Engine) unseal(s *gateway.Session, run *state.Run) {
	if err := s.Close(); err != nil {
		e.log.Warn("close the run's gateway session", "run", run.ID, "err", err)
	}
	u := s.Usage()
	g := &state.RunGateway{Requests: u.Requests, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, RefusedTotal: s.RefusedTotal()}
	for _, r := range s.Refused() {
		if len(g.Refused) == maxRecordedRefusals {
			break
		}
		g.Refused = append(g.Refused, e.redact(r.String()))
	}
	run.Gateway = g
}
