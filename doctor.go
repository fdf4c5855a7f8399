package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// checkLine is one line of `alfred doctor`: what was checked, whether it is
// right, what was found and, when it is not right, what to do.
type checkLine struct {
	Name   string
	OK     bool
	Detail string
	Fix    string
}

func (l checkLine) String() string {
	if l.OK {
		return fmt.Sprintf("OK   %s: %s", l.Name, l.Detail)
	}
	return fmt.Sprintf("FAIL %s: %s — %s", l.Name, l.Detail, l.Fix)
}

func okLine(name, detail string) checkLine { return checkLine{Name: name, OK: true, Detail: detail} }

func failLine(name, detail, fix string) checkLine {
	return checkLine{Name: name, Detail: detail, Fix: fix}
}

// doctorCmd is `alfred doctor [-project OWNER/NAME]...`: every check, one
// line each, and an error when any failed.
func doctorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var projects []string
	c, rest, err := load("doctor", args, stderr, func(fs *flag.FlagSet) {
		fs.Func("project", "project OWNER/NAME to check (repeatable)", func(s string) error {
			projects = append(projects, s)
			return nil
		})
	})
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		fmt.Fprintln(stdout, failLine("config", err.Error(), "correct the setting named, in the flags, ALFRED_* variables or -config file"))
		return errors.New("the configuration does not parse")
	}
	if len(rest) > 0 {
		return errUsage("doctor takes no argument, only -project OWNER/NAME (repeatable)")
	}
	d := &doctor{c: c, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, s := range projects {
		p, _, err := parseProject(c, s)
		if err != nil {
			return err
		}
		d.projects = append(d.projects, p)
	}
	lines := d.run(ctx)
	failed := 0
	hidden := secrets(c) // a forge may quote a token in its refusal
	for _, l := range lines {
		fmt.Fprintln(stdout, redact.Secrets(l.String(), hidden))
		if !l.OK {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(lines))
	}
	return nil
}

// doctor runs the checks of one configuration.
type doctor struct {
	c        *config.Config
	projects []forges.Project
	log      *slog.Logger
}

func (d *doctor) run(ctx context.Context) []checkLine {
	out := d.checkConfig()
	out = append(out, d.checkState(ctx))
	out = append(out, d.checkSettings(ctx)...)
	for _, f := range d.c.Forges {
		out = append(out, d.checkForge(ctx, f)...)
		out = append(out, d.checkOAuth(f))
	}
	if len(d.c.Forges) == 0 {
		out = append(out, d.checkOAuth(d.c.Forge))
	}
	out = append(out, d.checkServing(ctx)...)
	out = append(out, d.checkSandbox(ctx)...)
	return append(out, d.checkSealed()...)
}

// checkServing asks the bot serving this configuration (ALFRED_LISTEN on
// this machine), if it runs, what the forge cannot show: the webhook
// deliveries it refused for their signature, which means the webhook's
// secret on the forge is not one of ALFRED_WEBHOOK_SECRETS.
func (d *doctor) checkServing(ctx context.Context) []checkLine {
	host, port, err := net.SplitHostPort(d.c.Listen)
	if err != nil {
		return nil
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	u := "http://" + net.JoinHostPort(host, port) + "/readyz"
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return []checkLine{okLine("serving", "no bot answers at "+u+": the webhook secrets are checked while it runs")}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out []checkLine
	for _, l := range strings.Split(string(body), "\n") {
		forge, rest, ok := strings.Cut(strings.TrimPrefix(l, "forge "), ": ")
		if !strings.HasPrefix(l, "forge ") || !ok || !strings.Contains(rest, "webhook deliveries refused") {
			continue
		}
		out = append(out, failLine("webhook secret "+forge, "the bot at "+u+" says: "+rest,
			"set the webhook's secret on the forge to one of ALFRED_WEBHOOK_SECRETS (or add the forge's to them), then redeliver"))
	}
	if len(out) == 0 {
		out = append(out, okLine("serving", "the bot at "+u+" refused no webhook delivery for its signature since it started"))
	}
	return out
}

// checkSealed says, per agent CLI, whether its runs are sealed behind the
// model gateway (issue 21): its provider served with a key, or why not.
func (d *doctor) checkSealed() []checkLine {
	if !d.c.Sealing() {
		return []checkLine{okLine("sealed", sealedOff(d.c))}
	}
	served := gatewayProviders(d.c)
	var out []checkLine
	for _, mk := range locals {
		l, err := mk()
		if err != nil {
			continue
		}
		out = append(out, okLine("sealed "+l.ID(), sealedOf(d.c, l.Descriptor(), served)))
	}
	for _, why := range gateway.Unusable(offeredBy(d.c)) { // "VAR holds what: fix"
		what, fix, _ := strings.Cut(why, ": ")
		out = append(out, failLine("gateway key", what+"; the gateway does not hold it", fix))
	}
	return out
}

// sealedOff says that no run is sealed.
func sealedOff(c *config.Config) string {
	return "off (ALFRED_GATEWAY " + c.Gateway + ", runner " + c.Runner + "): agents run with their keys in the container, on AGENT_NETWORK"
}

// sealedOf says whether a CLI of descriptor d runs sealed with the
// configuration c and the providers served, as the doctor and the agents
// screen say it.
func sealedOf(c *config.Config, d agents.Descriptor, served []gateway.Provider) string {
	switch {
	case !c.Sealing():
		return sealedOff(c)
	case d.Sealed == nil:
		return "no: this CLI cannot run sealed; its runs need AGENT_NETWORK set to a network, and get its keys"
	}
	return sealedSaid(d.Sealed, served)
}

// sealedSaid says whether a CLI sealed to sd runs sealed with the
// providers served: yes with a credential the gateway holds (or a model of
// its own address that takes none), else which credential is missing and
// how to set it (agents.Sealed.Missing, as the agents screen and a run say).
func sealedSaid(sd *agents.Sealed, served []gateway.Provider) string {
	if why := sd.Missing(served); why != "" {
		return "no: " + why + "; until then its runs on AGENT_NETWORK none stop before they start, and on a network they get its keys"
	}
	sd = sd.For(served) // Copilot: its GitHub sign-in, else BYOK
	cat, _ := gateway.Lookup(sd.Provider)
	p := served[slices.IndexFunc(served, func(p gateway.Provider) bool { return p.Name == sd.Provider })]
	if p.Key != "" {
		return "yes: no network (AGENT_NETWORK none, the default), its model (" + sd.Provider + ") through the gateway, which holds the key (" + p.Header + ")"
	}
	return "yes: no network (AGENT_NETWORK none, the default), its model (" + sd.Provider + ") at " + cat.URLVar + " through the gateway, without a key (none is offered)"
}

func (d *doctor) checkConfig() []checkLine {
	c := d.c
	forgesSeen := []string{}
	if len(c.Forges) == 0 {
		forgesSeen = append(forgesSeen, "none")
	}
	for _, f := range c.Forges {
		forgesSeen = append(forgesSeen, fmt.Sprintf("%s (%s at %s)", f.Name, f.Kind, f.URL))
	}
	out := []checkLine{okLine("config", fmt.Sprintf("parsed; forges %s, runner %s", strings.Join(forgesSeen, ", "), c.Runner))}
	for _, m := range c.Missing() {
		what, fix, _ := strings.Cut(m, ": ")
		out = append(out, failLine("config", what, fix))
	}
	return out
}

// checkState opens the state repository read-only (a server may be running)
// and checks that its folder is writable.
func (d *doctor) checkState(ctx context.Context) checkLine {
	dir := d.c.StateDir
	st, err := openReadOnly(ctx, d.c)
	if errors.Is(err, fs.ErrNotExist) {
		parent := existingParent(dir)
		if err := state.Writable(parent); err != nil {
			return failLine("state", fmt.Sprintf("%s does not exist and %v", dir, err), "make "+parent+" writable by the bot's user, or set ALFRED_STATE_DIR")
		}
		return okLine("state", dir+" does not exist yet; alfred serve creates it")
	}
	if err != nil {
		return failLine("state", err.Error(), "point ALFRED_STATE_DIR at the bot's state repository")
	}
	if err := st.Close(); err != nil {
		return failLine("state", fmt.Sprintf("close %s: %v", dir, err), "check the state repository with git fsck")
	}
	if err := state.Writable(dir); err != nil {
		return failLine("state", err.Error(), "make "+dir+" writable by the bot's user")
	}
	return okLine("state", dir+" opens and is writable")
}

func existingParent(dir string) string {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
	}
}

// checkForge checks the token of forge fc and, for each of its projects,
// what the bot needs there.
func (d *doctor) checkForge(ctx context.Context, fc config.Forge) []checkLine {
	name := "forge"
	if len(d.c.Forges) > 1 {
		name += " " + fc.Name
	}
	f, _, err := newForge(d.c, fc, nil)
	if err != nil {
		return []checkLine{failLine(name, err.Error(), "set ALFRED_FORGE, ALFRED_FORGE_URL and ALFRED_FORGE_TOKEN")}
	}
	me, err := f.Me(ctx)
	if err != nil {
		return []checkLine{failLine(name, fmt.Sprintf("%s refused the token or did not answer: %v", fc.URL, err),
			"set ALFRED_FORGE_TOKEN to a valid token of the bot's account, and ALFRED_FORGE_URL to the forge's address")}
	}
	out := []checkLine{okLine(name, fmt.Sprintf("%s answers; the token is @%s's, the account Alfred acts as (its own events are ignored)", fc.URL, me.Login))}
	var mine []forges.Project
	for _, p := range d.projects {
		if p.Forge == fc.Name {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return append(out, failLine("projects", "none given on forge "+fc.Name+", so webhooks, labels and token scopes were not checked",
			"run alfred doctor -project "+fc.Name+":OWNER/NAME for each project the bot works on"))
	}
	for _, p := range mine {
		out = append(out, d.checkProject(ctx, f, p, labelCatalogue(fc))...)
	}
	return out
}

func (d *doctor) checkProject(ctx context.Context, f forges.Forge, p forges.Project, catalogue []forges.Label) []checkLine {
	name := "project " + p.FullName()
	branch, err := f.DefaultBranch(ctx, p)
	if err != nil {
		return []checkLine{failLine(name, err.Error(), "check the name, and give the bot's account access to the project")}
	}
	out := []checkLine{okLine(name, "readable, default branch "+branch)}
	if in, ok := f.(forges.Inspector); ok {
		out = append(out, d.checkAccess(ctx, in, p)...)
		out = append(out, d.checkWebhook(ctx, in, p))
	}
	return append(out, checkLabels(ctx, f, p, catalogue))
}

func (d *doctor) checkAccess(ctx context.Context, in forges.Inspector, p forges.Project) []checkLine {
	access, err := in.TokenAccess(ctx, p)
	if err != nil {
		return []checkLine{failLine("token "+p.FullName(), err.Error(), "check that the forge answers and the token is valid")}
	}
	out := make([]checkLine, 0, len(access))
	for _, a := range access {
		name := fmt.Sprintf("token %s (%s)", a.Area, p.FullName())
		detail := a.Detail
		if !a.Known {
			detail += " (not verifiable on this forge)"
		}
		if a.OK {
			out = append(out, okLine(name, detail))
		} else {
			out = append(out, failLine(name, detail, "give the bot's token and account this access, then run alfred doctor again"))
		}
	}
	return out
}

// hookURL is where the forge must deliver webhooks.
func (d *doctor) hookURL() string {
	public := d.c.PublicURL
	if public == "" {
		public = "http://" + d.c.Listen
	}
	return strings.TrimRight(public, "/") + "/webhooks/"
}

func (d *doctor) checkWebhook(ctx context.Context, in forges.Inspector, p forges.Project) checkLine {
	name, want, events := "webhook "+p.FullName(), d.hookURL()+p.Forge, in.WebhookEvents()
	add := fmt.Sprintf("add a webhook to %s with the events %s and a secret of ALFRED_WEBHOOK_SECRETS", want, strings.Join(events, ", "))
	hooks, err := in.Webhooks(ctx, p)
	if err != nil {
		return failLine(name, "cannot list the webhooks: "+err.Error(), "give the bot's account admin (Maintainer) access to read them, or check by hand that you "+add)
	}
	var others []string
	for _, h := range hooks {
		if strings.TrimRight(h.URL, "/") != want {
			others = append(others, h.URL)
			continue
		}
		var problems []string
		if !h.Active {
			problems = append(problems, "it is disabled")
		}
		if miss := h.MissingEvents(events); len(miss) > 0 {
			problems = append(problems, "it does not send "+strings.Join(miss, ", "))
		}
		if h.SecretKnown && !h.HasSecret {
			problems = append(problems, "it has no secret")
		}
		if len(problems) > 0 {
			return failLine(name, want+": "+strings.Join(problems, "; "), "edit the webhook: enable it, send "+strings.Join(events, ", ")+" and set a secret of ALFRED_WEBHOOK_SECRETS")
		}
		secret := "a secret is set; the forge does not show it: it must be one of ALFRED_WEBHOOK_SECRETS"
		if !h.SecretKnown {
			secret = "the forge does not show its secret: it must be one of ALFRED_WEBHOOK_SECRETS"
		}
		return okLine(name, want+", active, the events needed; "+secret)
	}
	detail := "no webhook points at " + want
	if len(others) > 0 {
		detail += " (found: " + strings.Join(others, ", ") + ")"
	}
	return failLine(name, detail, add)
}

func checkLabels(ctx context.Context, f forges.Forge, p forges.Project, catalogue []forges.Label) checkLine {
	name := "labels " + p.FullName()
	have, err := f.Labels(ctx, p)
	if err != nil {
		return failLine(name, err.Error(), "give the bot's account access to the project's labels")
	}
	var missing, differ []string
	for _, want := range catalogue {
		i := slices.IndexFunc(have, func(l forges.Label) bool { return l.Name == want.Name })
		switch {
		case i < 0:
			missing = append(missing, want.Name)
		case !forges.SameColor(have[i].Color, want.Color) || have[i].Description != want.Description:
			differ = append(differ, want.Name)
		}
	}
	if len(missing)+len(differ) == 0 {
		return okLine(name, fmt.Sprintf("the %d labels of the catalogue exist", len(catalogue)))
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d missing (%s)", len(missing), strings.Join(missing, ", ")))
	}
	if len(differ) > 0 {
		parts = append(parts, fmt.Sprintf("%d with another colour or description (%s)", len(differ), strings.Join(differ, ", ")))
	}
	return failLine(name, strings.Join(parts, "; "), "alfred labels sync -project "+p.Forge+":"+p.FullName())
}

func (d *doctor) checkOAuth(f config.Forge) checkLine {
	if f.OAuthClientID == "" && len(d.c.PublicProjects) > 0 {
		return okLine("oauth", "no OAuth2 application: nobody signs in; the pages of "+strings.Join(d.c.PublicProjects, ", ")+" are public (ALFRED_PUBLIC_PROJECTS)")
	}
	if f.OAuthClientID == "" {
		return failLine("oauth", "no OAuth2 application on forge "+f.Name+": nobody can sign in to the run pages with it",
			fmt.Sprintf("create an OAuth2 application on the forge with the callback %s/oauth/callback and set ALFRED_OAUTH_CLIENT_ID and ALFRED_OAUTH_CLIENT_SECRET", d.publicURL()))
	}
	if d.c.PublicURL == "" {
		return failLine("oauth", "the callback would be "+d.publicURL()+"/oauth/callback, which only this machine reaches",
			"set ALFRED_PUBLIC_URL to the address people reach Alfred at, and the same callback on the forge's OAuth2 application")
	}
	return okLine("oauth", "client "+f.OAuthClientID+" configured; its callback on forge "+f.Name+" must be "+d.c.PublicURL+"/oauth/callback")
}

func (d *doctor) publicURL() string {
	if d.c.PublicURL != "" {
		return d.c.PublicURL
	}
	return "http://" + d.c.Listen
}

// checkSandbox checks the Docker daemon, the agent image and the CLIs in it
// (or on the host, with the host runner).
func (d *doctor) checkSandbox(ctx context.Context) []checkLine {
	var out []checkLine
	switch d.c.Runner {
	case "host":
		out = append(out, okLine("runner", "host runner: agents run as plain processes, no Docker needed; sessions never resume"))
	case "kubernetes":
		out = append(out, okLine("runner", "kubernetes runner: a Pod per run; the CLIs are detected in Pods of the agent image below"))
	default:
		out = append(out, d.checkImage(ctx)...)
		if !out[len(out)-1].OK {
			return out
		}
	}
	runner, err := newRunner(ctx, d.c, d.log)
	if err != nil {
		if d.c.Runner == "kubernetes" {
			return append(out, failLine("kubernetes", err.Error(), "check ALFRED_KUBECONFIG and ALFRED_K8S_NAMESPACE, and that the bot may reach the API server"))
		}
		return append(out, failLine("docker", err.Error(), "start the Docker daemon, or set ALFRED_DOCKER_HOST to its address"))
	}
	if c, ok := runner.(interface{ Close() error }); ok {
		defer c.Close()
	}
	adapters, err := newAdapters(d.c)
	if err != nil {
		return append(out, failLine("agents", err.Error(), "fix the API adapter's settings (ALFRED_API_*)"))
	}
	ranges, err := verifiedRanges(d.c, adapters)
	if err != nil {
		return append(out, failLine("agents", err.Error(), "name only the agent CLIs' adapters in ALFRED_AGENT_VERIFIED_RANGES"))
	}
	return append(out, d.checkAgents(ctx, runner, localCLIs(adapters), ranges)...)
}

// checkImage asks the daemon for the agent image: the docker line, then
// the image line when the daemon answers.
func (d *doctor) checkImage(ctx context.Context) []checkLine {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if d.c.DockerHost != "" {
		opts = append(opts, client.WithHost(d.c.DockerHost))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return []checkLine{failLine("docker", err.Error(), "set ALFRED_DOCKER_HOST to the Docker daemon's address")}
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx); err != nil {
		return []checkLine{failLine("docker", fmt.Sprintf("the daemon at %s does not answer: %v", cli.DaemonHost(), err),
			"start the Docker daemon, or set ALFRED_DOCKER_HOST to its address")}
	}
	daemon := okLine("docker", "the daemon at "+cli.DaemonHost()+" answers")
	img, err := cli.ImageInspect(ctx, d.c.AgentImage)
	switch {
	case cerrdefs.IsNotFound(err):
		return []checkLine{daemon, failLine("image", d.c.AgentImage+" is not on the daemon at "+cli.DaemonHost(),
			"build it (docker build -t "+d.c.AgentImage+" sandbox/images/agent) or set ALFRED_AGENT_IMAGE")}
	case err != nil:
		return []checkLine{daemon, failLine("image", fmt.Sprintf("inspect %s: %v", d.c.AgentImage, err), "check the Docker daemon")}
	}
	return []checkLine{daemon, okLine("image", fmt.Sprintf("%s (%.12s)", d.c.AgentImage, strings.TrimPrefix(img.ID, "sha256:")))}
}

// checkAgents detects each CLI: every CLI installed must be resumable on the
// image runner, and at least one must be installed.
func (d *doctor) checkAgents(ctx context.Context, runner sandbox.Runner, clis []agents.CLI, ranges map[string]string) []checkLine {
	var out []checkLine
	var absent []string
	for _, in := range agents.Detect(ctx, runner, baseSpec(d.c), clis, ranges) {
		name := "agent " + in.AdapterID
		switch {
		case !in.Installed():
			absent = append(absent, in.AdapterID)
		case in.ResumableSessions:
			out = append(out, okLine(name, in.Version+", resumes sessions"))
		case sandbox.InContainer(in.Runner):
			out = append(out, failLine(name, in.Version+" does not resume sessions: "+in.Reason,
				"install a version in "+in.VerifiedRange+" in the agent image, or accept that its runs start over"))
		default:
			out = append(out, okLine(name, in.Version+" ("+in.Reason+")"))
		}
	}
	where := "in " + d.c.AgentImage
	if runner.Name() == "host" {
		where = "on the host's PATH"
	}
	switch {
	case len(out) == 0:
		out = append(out, failLine("agents", "no agent CLI found "+where, "install at least one (see sandbox/images/agent)"))
	case len(absent) > 0:
		out = append(out, okLine("agents", "not found "+where+" (fine if unused): "+strings.Join(absent, ", ")))
	}
	return out
}

// checkSettings is doctor's line on the overrides of the state branch: one
// FAIL line for each the bot ignores. No line when the state repository
// cannot be opened (the state line says why).
func (d *doctor) checkSettings(ctx context.Context) []checkLine {
	all, problems, found, err := storedOverrides(ctx, d.c)
	if !found && err == nil {
		return nil
	}
	if err != nil && all == nil {
		return nil
	}
	var out []checkLine
	if err != nil {
		out = append(out, failLine("settings", err.Error(), "repair or remove the record named (alfred state show PATH)"))
	}
	for _, p := range problems {
		out = append(out, failLine("settings", p.Error(), p.Fix()))
	}
	trials, err := unavailableTrials(ctx, d.c, all)
	if err != nil {
		out = append(out, failLine("settings", err.Error(), "see the state line"))
	}
	for _, why := range trials {
		out = append(out, failLine("settings", why+"; its issues' runs fail at start",
			"alfred agents detect, or set AGENT_TRIAL again with available adapters (alfred settings set)"))
	}
	if len(out) == 0 {
		out = append(out, okLine("settings", fmt.Sprintf("%d overrides in the state branch, all of known settings and well typed", len(all))))
	}
	return out
}
