package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/api"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/codex"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/grok"
	"github.com/alchemic-studio/alfred/agents/opencode"
	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/setup"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/sandbox/kube"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/state/mirror"
	"github.com/alchemic-studio/alfred/views"
)

// connected is one configured forge, built: its settings, its client and
// its webhook parser.
type connected struct {
	cfg   config.Forge
	forge forges.Forge
	hooks forges.Hooks
}

// connectForges builds every configured forge.
func connectForges(c *config.Config, m *metrics.Metrics) ([]connected, error) {
	out := make([]connected, 0, len(c.Forges))
	for _, fc := range c.Forges {
		f, hooks, err := newForge(c, fc, m)
		if err != nil {
			return nil, fmt.Errorf("forge %s: %w", fc.Name, err)
		}
		out = append(out, connected{cfg: fc, forge: f, hooks: hooks})
	}
	return out, nil
}

// newForge builds forge fc and its webhook parser. Every API request is
// counted and timed, and retried by one policy within the call budget (a
// nil m counts nothing).
func newForge(c *config.Config, fc config.Forge, m *metrics.Metrics) (forges.Forge, forges.Hooks, error) {
	hc := &http.Client{Transport: m.Transport(fc.Name, http.DefaultTransport)}
	retry := forges.RetryPolicy{Budget: c.ForgeCallBudget, OnRetry: m.ForgeRetry(fc.Name)}
	k, ok := setup.Of(fc.Kind)
	if !ok {
		return nil, nil, errors.New("no forge configured: set ALFRED_FORGE and ALFRED_FORGE_URL")
	}
	return k.New(setup.Options{URL: fc.URL, Token: fc.Token, HTTPClient: hc, Retry: retry,
		AppID: fc.AppID, AppKeyFile: fc.AppKeyFile, AppInstallation: fc.AppInstallation})
}

// newRunner builds the configured sandbox runner.
func newRunner(ctx context.Context, c *config.Config, log *slog.Logger) (sandbox.Runner, error) {
	switch c.Runner {
	case "host":
		return sandbox.NewHostRunner(sandbox.HostOptions{}), nil
	case "kubernetes":
		r, err := kube.New(ctx, kube.Options{Kubeconfig: c.Kube.Config, Namespace: c.Kube.Namespace, Instance: c.Instance,
			RequestCPU: resource.MustParse(c.Kube.CPURequest), RequestMemory: resource.MustParse(c.Kube.MemoryRequest),
			Relay: c.GatewayForwarder, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("kubernetes runner: %w", err)
		}
		return r, nil
	}
	r, err := sandbox.NewImageRunner(ctx, sandbox.ImageOptions{Host: c.DockerHost, Instance: c.Instance, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("image runner: %w", err)
	}
	return r, nil
}

// removeLeftovers removes the agent containers (or Pods) a crashed bot left
// behind. Only serve calls it: a subcommand beside a running server must not.
func removeLeftovers(ctx context.Context, r sandbox.Runner) error {
	if c, ok := r.(interface {
		Cleanup(context.Context) (int, error)
	}); ok {
		if _, err := c.Cleanup(ctx); err != nil {
			return fmt.Errorf("remove leftover agent sandboxes: %w", err)
		}
	}
	return nil
}

// locals are the agent CLIs Alfred can drive.
// Adding a CLI is one line here and one package under agents/.
var locals = []func() (*agents.Local, error){
	claudecode.New, codex.New, opencode.New, copilot.New, gemini.New, grok.New,
}

// localCLIs returns the CLIs behind the local adapters, for detection.
func localCLIs(adapters map[string]agents.Adapter) []agents.CLI {
	var clis []agents.CLI
	for _, id := range slices.Sorted(maps.Keys(adapters)) {
		if l, ok := adapters[id].(*agents.Local); ok {
			clis = append(clis, l.CLI())
		}
	}
	return clis
}

// newAdapters builds every adapter: the local CLIs, and the API adapter when
// an API is configured.
func newAdapters(c *config.Config) (map[string]agents.Adapter, error) {
	out := map[string]agents.Adapter{}
	for _, mk := range locals {
		l, err := mk()
		if err != nil {
			return nil, err
		}
		out[l.ID()] = l
	}
	if c.APIURL != "" {
		a, err := api.New(api.Options{BaseURL: c.APIURL, APIKey: c.APIKey, Model: c.APIModel})
		if err != nil {
			return nil, err
		}
		out[a.ID()] = a
	}
	return out, nil
}

// baseSpec is what every agent sandbox starts from: the image, its user, and
// the variables of the bot's environment offered to adapters.
func baseSpec(c *config.Config) sandbox.Spec {
	env := map[string]string{"HOME": agents.AgentHome, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
	if c.Runner == "host" { // a plain process finds its CLIs and home as the bot does
		env["PATH"], env["HOME"] = os.Getenv("PATH"), os.Getenv("HOME")
	}
	withheld := withheldEnv(c)
	for _, name := range c.AgentEnv {
		if _, held := withheld[name]; !held {
			if v, ok := os.LookupEnv(name); ok {
				env[name] = v
			}
		}
	}
	return sandbox.Spec{Image: c.AgentImage, UID: c.AgentUID, GID: c.AgentGID, Env: env}
}

// withheldEnv are the offered variables the gateway holds when it is on
// (the served providers' keys and endpoints), with their values: no
// container gets them but a run its project put on a network (botrun.Seal).
func withheldEnv(c *config.Config) map[string]string {
	held := map[string]string{}
	if !c.Sealing() {
		return held
	}
	creds := sealedCredentials(servedProviders(c))
	for _, name := range c.AgentEnv {
		if v, ok := os.LookupEnv(name); ok && slices.Contains(creds, name) {
			held[name] = v
		}
	}
	return held
}

// removeLeftoverSockets removes the run sockets' folders a killed bot left
// in dir (one process owns the data folder, as it owns the state): their
// runs are gone, and the runs started again open new ones.
func removeLeftoverSockets(dir string) error {
	old, err := filepath.Glob(filepath.Join(dir, "alfred-gw-*"))
	if err != nil {
		return fmt.Errorf("model gateway: %w", err)
	}
	for _, d := range old {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("model gateway: remove a killed run's socket: %w", err)
		}
	}
	return nil
}

// sealedCredentials are the variables the CLIs that run sealed behind one
// of the providers served take their credentials and endpoint from
// (agents.Sealed.Credentials); a CLI whose provider the gateway does not
// serve keeps them, and runs unsealed.
func sealedCredentials(served []string) []string {
	var out []string
	for _, mk := range locals {
		l, err := mk()
		if err != nil || l.Descriptor().Sealed == nil {
			continue
		}
		sd := l.Descriptor().Sealed
		if slices.ContainsFunc(sd.Providers(), func(p string) bool { return slices.Contains(served, p) }) {
			out = append(out, sd.Credentials...)
		}
	}
	return out
}

// gatewayProviders are the providers the gateway serves (gateway.Served,
// from its catalogue), from the variables ALFRED_AGENT_ENV offers.
func gatewayProviders(c *config.Config) []gateway.Provider {
	return gateway.Served(offeredBy(c))
}

// offeredBy reads a variable ALFRED_AGENT_ENV offers ("" for another).
func offeredBy(c *config.Config) func(name string) string {
	return func(name string) string {
		if !slices.Contains(c.AgentEnv, name) {
			return ""
		}
		return os.Getenv(name)
	}
}

// servedProviders names gatewayProviders.
func servedProviders(c *config.Config) []string {
	var names []string
	for _, p := range gatewayProviders(c) {
		names = append(names, p.Name)
	}
	return names
}

// gatewayDirName is the folder under ALFRED_DATA_DIR that holds the model
// gateway's per-run sockets: under the data folder, the Docker daemon sees
// it at the same path when the bot runs in a container.
const gatewayDirName = "gw"

// newSeal builds the model gateway when ALFRED_GATEWAY is on (nil when
// off): its providers and their keys come from the variables
// ALFRED_AGENT_ENV names (gatewayProviders), which no container then
// receives (baseSpec).
func newSeal(c *config.Config, dataDir string, log *slog.Logger) (*botrun.Seal, error) {
	if !c.Sealing() {
		return nil, nil
	}
	dir := filepath.Join(dataDir, gatewayDirName)
	// A session's socket is <dir>/alfred-gw-<10 characters>/gateway.sock.
	if n := len(dir) + len("/alfred-gw-0123456789/gateway.sock"); n > 107 {
		return nil, fmt.Errorf("setting ALFRED_GATEWAY: the gateway's sockets under %s would be %d bytes long, over the 107 a unix socket allows: choose a shorter ALFRED_DATA_DIR", dir, n)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	if err := removeLeftoverSockets(dir); err != nil {
		return nil, err
	}
	g, err := gateway.New(gateway.Options{Providers: gatewayProviders(c), Dir: dir, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("model gateway on: sealed runs reach only their provider through it", "providers", g.Providers(), "forwarder", cmp.Or(c.GatewayForwarder, "the agent image's"))
	return &botrun.Seal{Gateway: g, Forwarder: c.GatewayForwarder, Withheld: withheldEnv(c)}, nil
}

// newEngine assembles the engine from the configuration.
func newEngine(ctx context.Context, c *config.Config, st *state.Store, fs []connected, adapters map[string]agents.Adapter, detected <-chan struct{}, m *metrics.Metrics, log *slog.Logger) (*bot.Engine, sandbox.Runner, error) {
	runner, err := newRunner(ctx, c, log)
	if err != nil {
		return nil, nil, err
	}
	if err := removeLeftovers(ctx, runner); err != nil {
		return nil, nil, err
	}
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		return nil, nil, err
	}
	if ignored := c.Ignored(); len(ignored) > 0 {
		log.Warn("settings of a forge set without ALFRED_FORGE belong to no forge: ignored (each [forge NAME] section has its own)", "settings", ignored)
	}
	if err := adoptSessions(c, data, log); err != nil {
		return nil, nil, err
	}
	seal, err := newSeal(c, data, log)
	if err != nil {
		return nil, nil, err
	}
	clients := make(map[string]forges.Forge, len(fs))
	prefixes := make(map[string]string, len(fs))
	for _, f := range fs {
		clients[f.cfg.Name] = f.forge
		prefixes[f.cfg.Name] = statusPrefix(f.cfg)
	}
	e, err := bot.New(bot.Config{
		Forges: clients, StatusPrefixes: prefixes, Store: st, Adapters: adapters,
		Runner: runner, Sandbox: baseSpec(c), Seal: seal,
		Repos:     &botrun.Repos{Base: data, Name: "Alfred", Email: "alfred@localhost"},
		Sessions:  botrun.SessionStore{Base: data},
		PublicURL: c.PublicURL, MaxParallelRuns: c.MaxParallelRuns, PollInterval: c.PollInterval,
		ForgeCallBudget: c.ForgeCallBudget, EventBudget: c.ForgeEventBudget,
		Secrets:  secrets(c),
		Defaults: settingDefaults(c),
		Detected: detected,
		Metrics:  m,
		Logger:   log,
	})
	return e, runner, err
}

// adoptSessions moves the session folders of a bot that knew one forge (the
// layout had no forge level then) under that forge: the variables' forge,
// or the only one configured.
func adoptSessions(c *config.Config, data string, log *slog.Logger) error {
	forge := c.Forge.Name
	if c.Forge.Kind == "" && len(c.Forges) == 1 {
		forge = c.Forges[0].Name
	}
	if forge == "" {
		return nil
	}
	moved, err := botrun.SessionStore{Base: data}.Adopt(forge)
	if moved > 0 {
		log.Info("session folders moved under their forge", "forge", forge, "folders", moved)
	}
	return err
}

// settingDefaults are the per-project settings' defaults the service
// configuration replaces.
func settingDefaults(c *config.Config) map[string]string {
	return map[string]string{bot.AgentCredentialMounts.Key(): c.CredentialMounts}
}

// secrets lists every secret value the service holds, for the engine and
// the pages to hide wherever they show what an agent wrote.
func secrets(c *config.Config) []string {
	out := append([]string{c.APIKey, c.MetricsToken, remotePassword(c.StateRemote)}, c.SessionKeys...)
	for _, f := range c.Forges {
		out = append(out, f.Token, f.OAuthClientSecret)
		out = append(out, f.WebhookSecrets...)
	}
	for _, k := range c.AgentEnv { // offered or, with the gateway, held back
		if bot.SecretName(k) {
			out = append(out, os.Getenv(k))
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// remotePassword is the password (a token, as a rule) in the userinfo of
// the state remote's URL, if it names one.
func remotePassword(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// pageDeps is what the pages need: the records, the adapters for the agents
// screen, and every secret the service holds, to be hidden.
func pageDeps(c *config.Config, st *state.Store, fs []connected, adapters map[string]agents.Adapter, log *slog.Logger) (views.Deps, error) {
	creds, err := sandbox.ParseCredentialMounts(c.CredentialMounts)
	if err != nil {
		return views.Deps{}, fmt.Errorf("AGENT_CREDENTIAL_MOUNTS: %w", err)
	}
	served := gatewayProviders(c)
	var list []views.Agent
	for _, id := range slices.Sorted(maps.Keys(adapters)) {
		caps := adapters[id].Capabilities()
		a := views.Agent{ID: id, Kind: string(caps.Kind), Resumable: caps.ResumableSessions, SessionStatePath: caps.SessionStatePath}
		if m, ok := creds.Overlap(id, caps.SessionStatePath); ok {
			a.Shadowed = "credential mount " + m.Container + " overlaps the session path " + caps.SessionStatePath
		}
		if l, ok := adapters[id].(interface{ Descriptor() agents.Descriptor }); ok {
			a.Sealed = sealedOf(c, l.Descriptor(), served)
		}
		list = append(list, a)
	}
	statuses := views.Statuses{Person: lifecycle.StatusesWaiting(lifecycle.WaitsPerson), Work: lifecycle.StatusesWaiting(lifecycle.WaitsWork), Done: lifecycle.StatusesWaiting(lifecycle.WaitsNobody)}
	var phases []string
	for _, p := range agents.Phases() {
		phases = append(phases, string(p))
	}
	d := views.Deps{Version: version, Config: c, Ready: func(context.Context) error { return state.Writable(c.StateDir) }, Logger: log, Statuses: statuses, Phases: phases,
		Records: st, Agents: list, Runner: c.Runner, Secrets: secrets(c),
		Settings: projectSettings{store: st, defaults: settingDefaults(c)}}
	if len(fs) > 0 {
		d.Access = newAccess(c, fs)
	}
	t, err := newSessionTakeover(c, st)
	if err != nil {
		return views.Deps{}, err
	}
	d.Takeover = t // "continue this session yourself" on the run page
	return d, nil
}

// newAccess is the sign-in with each forge's OAuth2 application and the
// read permission checked through each project's own forge; without an
// OAuth2 application only the public projects can be read.
func newAccess(c *config.Config, fs []connected) *views.Access {
	var secrets []string
	for _, f := range fs {
		secrets = append(secrets, f.cfg.OAuthClientSecret)
	}
	key := sha256.Sum256([]byte("alfred session cookies\x00" + strings.Join(secrets, "\x00")))
	a := &views.Access{Permission: permissionOn(fs), Key: key[:], Admins: c.Admins, Public: func(p forges.Project) bool {
		return isPublic(c, p.FullName())
	}}
	a.Configure(c) // Secure cookies behind an https ALFRED_PUBLIC_URL; ALFRED_SESSION_KEYS
	public := c.PublicURL
	if public == "" {
		public = "http://" + c.Listen
	}
	for _, f := range fs {
		if f.cfg.OAuthClientID == "" {
			continue
		}
		k, _ := setup.Of(f.cfg.Kind) // a configured forge's kind is known (config checks it)
		in := views.SignIn{Forge: f.cfg.Name}
		in.OAuth, in.UserURL, in.LoginField = k.OAuth2(f.cfg.URL, f.cfg.OAuthClientID, f.cfg.OAuthClientSecret, public+"/oauth/callback")
		a.SignIns = append(a.SignIns, in)
	}
	return a
}

// isPublic tells whether ALFRED_PUBLIC_PROJECTS names project owner/name
// (or is *): anyone may read its pages, and its outcome gauges carry its name.
func isPublic(c *config.Config, full string) bool {
	return slices.Contains(c.PublicProjects, "*") || slices.Contains(c.PublicProjects, full)
}

// outcomesTTL is how long the outcome gauges serve their figures before a
// scrape computes them again from the store.
const outcomesTTL = time.Minute

// outcomeFigures reads the outcome gauges' figures from the store. /metrics
// has no sign-in, so a project is named only when it is public (isPublic);
// the others are pooled per forge under project "".
func outcomeFigures(ctx context.Context, c *config.Config, st *state.Store, log *slog.Logger) func() []metrics.Outcome {
	public := func(p state.ProjectRef) bool { return isPublic(c, p.Owner+"/"+p.Project) }
	return func() []metrics.Outcome {
		figures, problems := outcomes.FiguresOf(ctx, st, public, time.Now())
		if len(problems) > 0 {
			log.Warn("outcome gauges: records left out", "count", len(problems), "first", problems[0])
		}
		out := make([]metrics.Outcome, len(figures))
		for i, f := range figures {
			out[i] = metrics.Outcome(f)
		}
		return out
	}
}

// permissionOn asks each project's own forge what a login may do there.
func permissionOn(fs []connected) func(context.Context, forges.Project, string) (forges.Permission, error) {
	return func(ctx context.Context, p forges.Project, login string) (forges.Permission, error) {
		for _, f := range fs {
			if f.cfg.Name == p.Forge {
				return f.forge.Permission(ctx, p, login)
			}
		}
		return forges.PermissionNone, fmt.Errorf("forge %q is not configured", p.Forge)
	}
}

// stateKeeper watches the state store for serve: whether its writes succeed
// and whether the disks of the store and of the event journal take writes
// (for /readyz, the home page and alfred_state_writable), and the mirror of
// the branch to ALFRED_STATE_REMOTE.
type stateKeeper struct {
	health *state.Health  // the store's commits and the disks of the store and the data folder
	mirror *mirror.Mirror // nil without ALFRED_STATE_REMOTE
	m      *metrics.Metrics
	log    *slog.Logger
}

// prepareFor bounds what the start asks of the state remote.
const prepareFor = 2 * time.Minute

// openState opens the state store for serve. With ALFRED_STATE_REMOTE set,
// an empty state folder is first restored from the remote, a remote holding
// commits the local branch lacks stops the start (the error says how to
// resolve it), and the mirror pushes the branch after every commit batch.
func openState(ctx context.Context, c *config.Config, m *metrics.Metrics, log *slog.Logger) (*state.Store, *stateKeeper, error) {
	k := &stateKeeper{health: state.NewHealth(log, c.StateDir, c.DataDir), m: m, log: log}
	if c.StateRemote != "" {
		mr, err := k.prepareMirror(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		k.mirror = mr
	}
	st, err := openWaiting(ctx, c.StateDir, state.Options{Logger: log, Journal: true, Observe: k.observe, Committed: k.committed}, stateLockWait, log)
	if err != nil {
		return nil, nil, err
	}
	m.StateWritable(func() bool { return k.health.WriteErr() == nil })
	if k.mirror != nil {
		k.mirror.Start()
	}
	return st, k, nil
}

// stateLockWait bounds how long serve waits for another server to let go of
// the state store. A Pod that replaces a deleted one starts while the old
// one still shuts down (the manifests give it 45 s, and their startup
// probe 180 s): the new one waits rather than exits and restarts.
var stateLockWait = 90 * time.Second

// openWaiting opens the state store, waiting at most wait while another
// server holds it; then the error names the holder.
func openWaiting(ctx context.Context, dir string, opts state.Options, wait time.Duration, log *slog.Logger) (*state.Store, error) {
	deadline := time.Now().Add(wait)
	for logged := false; ; logged = true {
		st, err := state.Open(ctx, dir, opts)
		if err == nil || !errors.Is(err, state.ErrLocked) || !time.Now().Before(deadline) {
			return st, err
		}
		if !logged {
			log.Warn("the state store is held by another server; waiting for it to stop", "state", dir, "wait", wait, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open state %s: %w", dir, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// prepareMirror restores or checks the state folder against the remote and
// makes the mirror (not started).
func (k *stateKeeper) prepareMirror(ctx context.Context, c *config.Config) (*mirror.Mirror, error) {
	user, token := forgeCredentials(c, c.StateRemote)
	remote, err := mirror.ParseRemote(c.StateRemote, user, token)
	if err != nil {
		return nil, fmt.Errorf("setting ALFRED_STATE_REMOTE: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, prepareFor)
	defer cancel()
	start, err := mirror.Prepare(pctx, c.StateDir, remote, k.log)
	if err != nil {
		return nil, err
	}
	var mr *mirror.Mirror // made next; the gauge is read once serving
	observe := k.m.StateMirror(func() int { return mr.Status().Behind })
	mr = mirror.New(mirror.Options{Dir: c.StateDir, Remote: remote, Start: start, Logger: k.log, Observe: observe})
	k.log.Info("state mirror on", "remote", remote.URL, "restored", start.Restored, "took", start.Took.Round(time.Millisecond))
	return mr, nil
}

// forgeCredentials are the bot's git credentials on the configured forge
// whose host is the remote's: a token is only sent where it comes from.
func forgeCredentials(c *config.Config, remote string) (user, token string) {
	ru, err := url.Parse(remote)
	if err != nil || (ru.Scheme != "http" && ru.Scheme != "https") {
		return "", ""
	}
	for _, f := range c.Forges {
		host, user := forgeGitHost(f)
		if f.Token != "" && strings.EqualFold(host, ru.Hostname()) {
			return user, f.Token
		}
	}
	return "", ""
}

// forgeGitHost is the host a forge serves git from, and the user name git
// gives with the bot's token there.
func forgeGitHost(f config.Forge) (host, user string) {
	k, ok := setup.Of(f.Kind)
	if !ok {
		return "", ""
	}
	return k.GitHost(f.URL)
}

// observe is the store's Observe: it counts the commit and notes whether
// writes fail.
func (k *stateKeeper) observe(took time.Duration, err error) {
	k.m.StateWritten(took, err)
	k.health.Observe(took, err)
}

// committed is the store's Committed: the branch moved, the mirror pushes.
func (k *stateKeeper) committed(string) {
	if k.mirror != nil {
		k.mirror.Notify()
	}
}

// ready wraps the readiness check base with the state's: not ready while
// commits fail or while a disk refuses a small write.
func (k *stateKeeper) ready(base func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if base != nil {
			if err := base(ctx); err != nil {
				return err
			}
		}
		return k.health.Ready()
	}
}

// notes are the mirror's state for /readyz and the home page.
func (k *stateKeeper) notes() []string {
	if k.mirror == nil {
		return nil
	}
	s := k.mirror.Status()
	if s.Err == nil && s.Behind == 0 {
		return []string{"state mirror up to date (" + s.Remote + ")"}
	}
	note := fmt.Sprintf("state mirror behind by %d commits (%s)", s.Behind, s.Remote)
	if s.Behind == 1 {
		note = fmt.Sprintf("state mirror behind by 1 commit (%s)", s.Remote)
	}
	if s.Err != nil {
		note += fmt.Sprintf(": pushes fail since %s (%d tries, next at %s): %v", s.FailingSince.UTC().Format(time.RFC3339),
			s.Failures, s.NextTry.UTC().Format(time.TimeOnly), s.Err)
	}
	return []string{note}
}

// close stops the mirror after one last push of what the store committed
// (call it after the store's Close).
func (k *stateKeeper) close() {
	if k == nil || k.mirror == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.mirror.Close(ctx); err != nil {
		k.log.Warn("state mirror: last push at shutdown failed; it is pushed at the next start", "err", err)
	}
}
