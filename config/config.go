package config

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Config is the validated start-up configuration of `alfred serve` and of the
// other subcommands.
type Config struct {
	Listen          string
	PublicURL       string
	StateDir        string
	StateRemote     string // the state branch's mirror and restore source (package state/mirror)
	DataDir         string
	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration

	// Forge is the forge of the variables and flags (ALFRED_FORGE...);
	// Forges are every forge the bot works on: that one first when its kind
	// is set, then one per [forge NAME] section of the configuration file.
	Forge  Forge
	Forges []Forge
	// ForgeCallBudget bounds one forge API call, its retries included;
	// ForgeEventBudget bounds the handling of one event.
	ForgeCallBudget  time.Duration
	ForgeEventBudget time.Duration

	Runner     string
	DockerHost string
	// Kube is where the kubernetes runner puts its Pods.
	Kube             Kube
	Instance         string
	AgentImage       string
	MaxParallelRuns  int
	PollInterval     time.Duration
	CredentialMounts string
	AgentUID         int
	AgentGID         int
	AgentEnv         []string

	APIURL   string
	APIKey   string
	APIModel string

	PublicProjects []string

	MetricsToken string
	// MetricsListen, when set, is where /metrics is served, alone.
	MetricsListen string

	// AgentDetectInterval is how often the agent CLIs are detected again
	// (0: only at start and on request).
	AgentDetectInterval time.Duration
	// AgentVerifiedRanges replaces, per adapter id, the semver range in
	// which a CLI may resume sessions. Check the ids with CheckVerifiedRanges.
	AgentVerifiedRanges map[string]string
	// Admins are the forge logins who may ask for a detection from the
	// agents screen.
	Admins []string
	// SessionKeys are the secrets of the sign-in cookies: the first signs,
	// all are accepted; empty: derived from OAuthClientSecret.
	SessionKeys []string

	// Gateway is ALFRED_GATEWAY: "auto" (on with the image and kubernetes runners), "on"
	// or "off". On, the runs of the CLIs that can run sealed, on the
	// default AGENT_NETWORK none, have no network in their container and
	// reach their model through Alfred's model gateway, which holds the
	// provider's key. Sealing tells whether it is on.
	Gateway string
	// GatewayForwarder, when set, is a static alfred-forward on the Docker
	// daemon's host, bind-mounted read-only into sealed containers; empty:
	// the agent image's own /usr/local/bin/alfred-forward.
	GatewayForwarder string

	// kinds are the forge kinds ALFRED_FORGE accepts (Load's).
	kinds []ForgeKind
}

// Forge is one forge the bot works on: its kind, the name its records and
// webhook URL /webhooks/{name} carry, where it is, the bot's token there,
// the secrets its webhooks are signed with and the OAuth2 application people
// sign in to the pages with.
type Forge struct {
	Kind              string
	Name              string
	URL               string
	Token             string
	WebhookSecrets    []string
	OAuthClientID     string
	OAuthClientSecret string
	// StatusLabels is the form of the status labels: "scoped" (the forge's
	// own: "status/x" exclusive on Forgejo and Gitea, "status::x" on GitLab
	// and GitHub) or "colons" ("status::x" everywhere).
	StatusLabels string
	// GitHub App mode (GitHub only): the App's id, the file of its private
	// key, and optionally one installation for every repository.
	AppID           int64
	AppKeyFile      string
	AppInstallation int64
}

// Setting describes one configuration value: its flag, its ALFRED_* variable,
// its default and what it accepts. The catalogue is the single source of the
// flags, the variables, the validation and the README's reference table.
type Setting struct {
	Flag    string // flag name, without dashes
	Env     string // environment variable
	Default string
	Accepts string // what a valid value looks like, for error messages and docs
	Help    string
	Secret  bool // never printed back
	// PerForge settings describe one forge: the variables set the forge of
	// Config.Forge, and a [forge NAME] section of the file sets them for
	// another forge.
	PerForge bool
	set      func(c *Config, v string) error
	get      func(c *Config) string
}

// Settings is the catalogue, in the order the README lists it.
var Settings = []Setting{
	{Flag: "listen", Env: "ALFRED_LISTEN", Default: "127.0.0.1:8080", Accepts: "host:port",
		Help: "address the HTTP server listens on",
		set:  func(c *Config, v string) error { return setHostPort(&c.Listen, v) }, get: func(c *Config) string { return c.Listen }},
	{Flag: "public-url", Env: "ALFRED_PUBLIC_URL", Default: "", Accepts: "an http(s) URL, or empty for http://<listen>",
		Help: "URL people reach Alfred at, used for links in comments",
		set:  func(c *Config, v string) error { return setURL(&c.PublicURL, v, true) }, get: func(c *Config) string { return c.PublicURL }},
	{Flag: "state", Env: "ALFRED_STATE_DIR", Default: "./var/state.git", Accepts: "a folder path",
		Help: "bare git repository that holds every record (branch alfred/state)",
		set:  func(c *Config, v string) error { return setNonEmpty(&c.StateDir, v) }, get: func(c *Config) string { return c.StateDir }},
	{Flag: "state-remote", Env: "ALFRED_STATE_REMOTE", Default: "", Accepts: "a git URL (https://, ssh://, host:path or a path), or empty", Secret: true,
		Help: "private repository the state branch is pushed to after every commit (in the background; a push failure never blocks intake) and restored from into an empty state folder; an https URL without user:token authenticates with the bot's token of the forge on its host",
		set:  setRemote, get: func(c *Config) string { return c.StateRemote }},
	{Flag: "data", Env: "ALFRED_DATA_DIR", Default: "./var", Accepts: "a folder path",
		Help: "base of the cached clones, run worktrees and .agent-sessions",
		set:  func(c *Config, v string) error { return setNonEmpty(&c.DataDir, v) }, get: func(c *Config) string { return c.DataDir }},
	{Flag: "log-format", Env: "ALFRED_LOG_FORMAT", Default: "text", Accepts: "text or json",
		Help: "log/slog handler",
		set:  func(c *Config, v string) error { return setOneOf(&c.LogFormat, v, "text", "json") }, get: func(c *Config) string { return c.LogFormat }},
	{Flag: "log-level", Env: "ALFRED_LOG_LEVEL", Default: "info", Accepts: "debug, info, warn or error",
		Help: "lowest level logged",
		set:  func(c *Config, v string) error { return setOneOf(&c.LogLevel, v, "debug", "info", "warn", "error") }, get: func(c *Config) string { return c.LogLevel }},
	{Flag: "shutdown-timeout", Env: "ALFRED_SHUTDOWN_TIMEOUT", Default: "30s", Accepts: "a positive Go duration such as 30s",
		Help: "how long requests and runs in flight may take to finish on SIGTERM",
		set:  func(c *Config, v string) error { return setDuration(&c.ShutdownTimeout, v) }, get: func(c *Config) string { return c.ShutdownTimeout.String() }},

	{Flag: "forge", Env: "ALFRED_FORGE", Default: "", PerForge: true, Accepts: kindsPlaceholder + ", or empty",
		Help: "kind of forge the bot works on (Forgejo covers Gitea); empty serves without a forge",
		set:  setKind, get: func(c *Config) string { return c.Forge.Kind }},
	{Flag: "forge-name", Env: "ALFRED_FORGE_NAME", Default: "", PerForge: true, Accepts: "letters, digits, '-' or '_'; empty means the forge kind",
		Help: "name of the forge in records and in the webhook URL /webhooks/{name}",
		set:  func(c *Config, v string) error { return setName(&c.Forge.Name, v) }, get: func(c *Config) string { return c.Forge.Name }},
	{Flag: "forge-url", Env: "ALFRED_FORGE_URL", Default: "", PerForge: true, Accepts: "the forge's base http(s) URL",
		Help: "e.g. https://forgejo.example.com (GitHub: https://api.github.com)",
		set:  func(c *Config, v string) error { return setURL(&c.Forge.URL, v, true) }, get: func(c *Config) string { return c.Forge.URL }},
	{Flag: "forge-token", Env: "ALFRED_FORGE_TOKEN", Default: "", Accepts: "an API token of the bot's account", Secret: true, PerForge: true,
		Help: "token of the bot's account on the forge (also used for git over HTTPS)",
		set:  func(c *Config, v string) error { c.Forge.Token = v; return nil }, get: func(c *Config) string { return c.Forge.Token }},
	{Flag: "webhook-secrets", Env: "ALFRED_WEBHOOK_SECRETS", Default: "", Accepts: "comma-separated secrets", Secret: true, PerForge: true,
		Help: "webhook secrets accepted (several at once while rotating)",
		set:  func(c *Config, v string) error { c.Forge.WebhookSecrets = splitList(v); return nil }, get: func(c *Config) string { return strings.Join(c.Forge.WebhookSecrets, ",") }},
	{Flag: "status-labels", Env: "ALFRED_STATUS_LABELS", Default: "scoped", PerForge: true, Accepts: "scoped or colons",
		Help: "form of the status labels: scoped, as the forge keeps one itself (Forgejo and Gitea: status/x, exclusive; GitLab: status::x, scoped where the edition has them; GitHub: status::x), or colons (status::x everywhere, as before); alfred labels sync renames them from the other form",
		set: func(c *Config, v string) error {
			return setOneOf(&c.Forge.StatusLabels, cmp.Or(v, "scoped"), "scoped", "colons")
		}, get: func(c *Config) string { return c.Forge.StatusLabels }},
	{Flag: "github-app-id", Env: "ALFRED_GITHUB_APP_ID", Default: "", PerForge: true, Accepts: "a GitHub App's numeric id, or empty",
		Help: "act as this GitHub App (with ALFRED_GITHUB_APP_KEY_FILE) instead of ALFRED_FORGE_TOKEN's account: comments by <app-slug>[bot], short-lived installation tokens",
		set:  func(c *Config, v string) error { return setID(&c.Forge.AppID, v) }, get: func(c *Config) string { return idString(c.Forge.AppID) }},
	{Flag: "github-app-key-file", Env: "ALFRED_GITHUB_APP_KEY_FILE", Default: "", PerForge: true, Accepts: "the path of the App's private key (PEM)",
		Help: "private key of the GitHub App, read at start and never printed (keep the file mode 0600)",
		set:  func(c *Config, v string) error { c.Forge.AppKeyFile = v; return nil }, get: func(c *Config) string { return c.Forge.AppKeyFile }},
	{Flag: "github-app-installation", Env: "ALFRED_GITHUB_APP_INSTALLATION", Default: "", PerForge: true, Accepts: "an installation id, or empty",
		Help: "the App's installation for every repository; empty: looked up per repository",
		set:  func(c *Config, v string) error { return setID(&c.Forge.AppInstallation, v) }, get: func(c *Config) string { return idString(c.Forge.AppInstallation) }},
	{Flag: "forge-call-budget", Env: "ALFRED_FORGE_CALL_BUDGET", Default: "1m", Accepts: "a positive Go duration such as 1m",
		Help: "longest time one forge API call may take, its retries included (408, 425, 429, 5xx and network errors are retried; refusals never)",
		set:  func(c *Config, v string) error { return setDuration(&c.ForgeCallBudget, v) }, get: func(c *Config) string { return c.ForgeCallBudget.String() }},
	{Flag: "forge-event-budget", Env: "ALFRED_FORGE_EVENT_BUDGET", Default: "5m", Accepts: "a positive Go duration such as 5m",
		Help: "longest time the handling of one event may take on the forge, all its calls together; past it the event is quarantined",
		set:  func(c *Config, v string) error { return setDuration(&c.ForgeEventBudget, v) }, get: func(c *Config) string { return c.ForgeEventBudget.String() }},

	{Flag: "runner", Env: "ALFRED_RUNNER", Default: "image", Accepts: "image, kubernetes or host",
		Help: "where agent CLIs run: a Docker container (image), a Pod of a Kubernetes cluster (kubernetes) or a plain process (host, never resumes sessions)",
		set:  func(c *Config, v string) error { return setOneOf(&c.Runner, v, "image", "kubernetes", "host") }, get: func(c *Config) string { return c.Runner }},
	{Flag: "kubeconfig", Env: "ALFRED_KUBECONFIG", Default: "", Accepts: "a kubeconfig file, or empty",
		Help: "cluster of the kubernetes runner; empty: the cluster the bot runs in (its service account)",
		set:  func(c *Config, v string) error { c.Kube.Config = v; return nil }, get: func(c *Config) string { return c.Kube.Config }},
	{Flag: "k8s-namespace", Env: "ALFRED_K8S_NAMESPACE", Default: "", Accepts: "a namespace, or empty",
		Help: "namespace of the kubernetes runner's Pods; empty: the bot's own namespace in the cluster, else default",
		set:  func(c *Config, v string) error { c.Kube.Namespace = v; return nil }, get: func(c *Config) string { return c.Kube.Namespace }},
	{Flag: "k8s-cpu-request", Env: "ALFRED_K8S_CPU_REQUEST", Default: "100m", Accepts: "a Kubernetes CPU quantity such as 250m",
		Help: "CPU each run Pod requests from the scheduler (its limit is the run's, one CPU by default)",
		set:  func(c *Config, v string) error { return setQuantity(&c.Kube.CPURequest, v) }, get: func(c *Config) string { return c.Kube.CPURequest }},
	{Flag: "k8s-memory-request", Env: "ALFRED_K8S_MEMORY_REQUEST", Default: "256Mi", Accepts: "a Kubernetes memory quantity such as 512Mi",
		Help: "memory each run Pod requests from the scheduler (its limit is the run's, 2 GiB by default)",
		set:  func(c *Config, v string) error { return setQuantity(&c.Kube.MemoryRequest, v) }, get: func(c *Config) string { return c.Kube.MemoryRequest }},
	{Flag: "docker-host", Env: "ALFRED_DOCKER_HOST", Default: "", Accepts: "a Docker daemon address such as unix:///var/run/docker.sock; empty uses DOCKER_HOST",
		Help: "Docker daemon of the image runner",
		set:  func(c *Config, v string) error { c.DockerHost = v; return nil }, get: func(c *Config) string { return c.DockerHost }},
	{Flag: "instance", Env: "ALFRED_INSTANCE", Default: "default", Accepts: "letters, digits, '-' or '_'",
		Help: "name of this bot on the Docker daemon: its containers carry it, and a start removes only its own leftovers",
		set: func(c *Config, v string) error {
			if v == "" {
				return errEmpty
			}
			return setName(&c.Instance, v)
		}, get: func(c *Config) string { return c.Instance }},
	{Flag: "agent-image", Env: "ALFRED_AGENT_IMAGE", Default: "alfred-agent:latest", Accepts: "a Docker image reference",
		Help: "image the agent CLIs run in (see sandbox/images/agent)",
		set:  func(c *Config, v string) error { return setNonEmpty(&c.AgentImage, v) }, get: func(c *Config) string { return c.AgentImage }},
	{Flag: "max-parallel-runs", Env: "ALFRED_MAX_PARALLEL_RUNS", Default: "2", Accepts: "a whole number from 1 to 64",
		Help: "runs of different mailboxes executed at once",
		set:  func(c *Config, v string) error { return setInt(&c.MaxParallelRuns, v, 1, 64) }, get: func(c *Config) string { return strconv.Itoa(c.MaxParallelRuns) }},
	{Flag: "poll-interval", Env: "ALFRED_POLL_INTERVAL", Default: "1m", Accepts: "a positive Go duration such as 1m",
		Help: "how often CI state and mergeability of open merge requests are polled (forges that send no webhook for them)",
		set:  func(c *Config, v string) error { return setDuration(&c.PollInterval, v) }, get: func(c *Config) string { return c.PollInterval.String() }},
	{Flag: "agent-user", Env: "ALFRED_AGENT_USER", Default: "1000:1000", Accepts: "uid:gid, not 0",
		Help: "user the agent runs as inside its container (the image's non-root user)",
		set:  setUser, get: func(c *Config) string { return strconv.Itoa(c.AgentUID) + ":" + strconv.Itoa(c.AgentGID) }},
	{Flag: "agent-env", Env: "ALFRED_AGENT_ENV", Default: "", Accepts: "comma-separated variable names",
		Help: "variables of the bot's own environment offered to agent CLIs (e.g. ANTHROPIC_API_KEY); each adapter takes only those on its allowlist",
		set:  func(c *Config, v string) error { c.AgentEnv = splitList(v); return nil }, get: func(c *Config) string { return strings.Join(c.AgentEnv, ",") }},
	{Flag: "api-url", Env: "ALFRED_API_URL", Default: "", Accepts: "an OpenAI-compatible API root such as https://api.example.com/v1, or empty",
		Help: "LLM API of the api adapter (text-only phases: analysis and answer); empty disables it",
		set:  func(c *Config, v string) error { return setURL(&c.APIURL, v, true) }, get: func(c *Config) string { return c.APIURL }},
	{Flag: "api-key", Env: "ALFRED_API_KEY", Default: "", Accepts: "the API's key", Secret: true,
		Help: "key of the api adapter's LLM API",
		set:  func(c *Config, v string) error { c.APIKey = v; return nil }, get: func(c *Config) string { return c.APIKey }},
	{Flag: "api-model", Env: "ALFRED_API_MODEL", Default: "", Accepts: "a model name",
		Help: "model of the api adapter when AGENT_MODEL names none",
		set:  func(c *Config, v string) error { c.APIModel = v; return nil }, get: func(c *Config) string { return c.APIModel }},
	{Flag: "oauth-client-id", Env: "ALFRED_OAUTH_CLIENT_ID", Default: "", Accepts: "the client id of an OAuth2 application on the forge", PerForge: true,
		Help: "sign-in to the run pages with the forge (callback URL: {ALFRED_PUBLIC_URL}/oauth/callback); empty: nobody can sign in",
		set:  func(c *Config, v string) error { c.Forge.OAuthClientID = v; return nil }, get: func(c *Config) string { return c.Forge.OAuthClientID }},
	{Flag: "oauth-client-secret", Env: "ALFRED_OAUTH_CLIENT_SECRET", Default: "", Accepts: "that application's client secret", Secret: true, PerForge: true,
		Help: "secret of the OAuth2 application (also keys the session cookies)",
		set:  func(c *Config, v string) error { c.Forge.OAuthClientSecret = v; return nil }, get: func(c *Config) string { return c.Forge.OAuthClientSecret }},
	{Flag: "public-projects", Env: "ALFRED_PUBLIC_PROJECTS", Default: "", Accepts: "comma-separated OWNER/NAME, or *",
		Help: "projects whose pages anyone may read without signing in, and which /metrics names in its outcome series (the others are pooled per forge)",
		set:  func(c *Config, v string) error { c.PublicProjects = splitList(v); return nil }, get: func(c *Config) string { return strings.Join(c.PublicProjects, ",") }},
	{Flag: "metrics-token", Env: "ALFRED_METRICS_TOKEN", Default: "", Accepts: "a bearer token", Secret: true,
		Help: "token Prometheus must send (Authorization: Bearer ...) to read /metrics; empty: /metrics is open",
		set:  func(c *Config, v string) error { c.MetricsToken = v; return nil }, get: func(c *Config) string { return c.MetricsToken }},
	{Flag: "metrics-listen", Env: "ALFRED_METRICS_LISTEN", Default: "", Accepts: "host:port, or empty",
		Help: "address of a server of its own for /metrics (same token check), which the pages' server then no longer serves; empty: /metrics is on the pages' server",
		set: func(c *Config, v string) error {
			if v == "" {
				c.MetricsListen = ""
				return nil
			}
			return setHostPort(&c.MetricsListen, v)
		}, get: func(c *Config) string { return c.MetricsListen }},
	{Flag: "credential-mounts", Env: "AGENT_CREDENTIAL_MOUNTS", Default: "", Accepts: "adapter=/host/path:/home/agent/path, comma-separated",
		Help: "read-only credential mounts per adapter (default for the setting of the same name)",
		set:  func(c *Config, v string) error { c.CredentialMounts = v; return nil }, get: func(c *Config) string { return c.CredentialMounts }},
	{Flag: "agent-detect-interval", Env: "ALFRED_AGENT_DETECT_INTERVAL", Default: "1h", Accepts: "a Go duration such as 1h, or 0",
		Help: "how often the agent CLIs' versions are detected again; 0: only at start, on SIGHUP, `alfred agents detect --refresh` and the agents screen's button",
		set:  func(c *Config, v string) error { return setDurationOrZero(&c.AgentDetectInterval, v) }, get: func(c *Config) string { return c.AgentDetectInterval.String() }},
	{Flag: "agent-verified-ranges", Env: "ALFRED_AGENT_VERIFIED_RANGES", Default: "", Accepts: "adapter=semver constraint, ';'-separated, e.g. claude-code=>=2.1.101, <2.3.0;codex=>=0.40.0",
		Help: "replaces, per adapter, the range of CLI versions that may resume sessions: to widen it, at a risk (see Operations)",
		set:  setRanges, get: func(c *Config) string { return joinRanges(c.AgentVerifiedRanges) }},
	{Flag: "admins", Env: "ALFRED_ADMINS", Default: "", Accepts: "comma-separated forge logins",
		Help: "people who, signed in, may see /config and ask for a new detection of the agent CLIs on the agents screen (login on any forge, or forge:login for one)",
		set:  func(c *Config, v string) error { c.Admins = splitList(v); return nil }, get: func(c *Config) string { return strings.Join(c.Admins, ",") }},
	{Flag: "session-keys", Env: "ALFRED_SESSION_KEYS", Default: "", Accepts: "comma-separated secrets of 32 characters or more", Secret: true,
		Help: "secrets the sign-in cookies are signed and encrypted with: the first signs, all are accepted (to rotate, put a new one first, drop the old one a day later); empty: derived from ALFRED_OAUTH_CLIENT_SECRET",
		set: func(c *Config, v string) error {
			keys := splitList(v)
			for _, k := range keys {
				if len(k) < 32 {
					return fmt.Errorf("a key of %d characters is too short", len(k))
				}
			}
			c.SessionKeys = keys
			return nil
		}, get: func(c *Config) string { return strings.Join(c.SessionKeys, ",") }},
	{Flag: "gateway", Env: "ALFRED_GATEWAY", Default: "auto", Accepts: "auto, on or off",
		Help: "the model gateway that seals agent runs: no network in their container (AGENT_NETWORK none, the default), model requests through Alfred, which keeps the provider keys ALFRED_AGENT_ENV offers (Anthropic always; OpenAI, Gemini and xAI when their key is offered) to itself; auto: on with the image and kubernetes runners (a host process cannot be sealed)",
		set:  func(c *Config, v string) error { return setOneOf(&c.Gateway, v, "auto", "on", "off") },
		get:  func(c *Config) string { return c.Gateway }},
	{Flag: "gateway-forwarder", Env: "ALFRED_GATEWAY_FORWARDER", Default: "", Accepts: "an absolute path on the Docker daemon's host, or empty",
		Help: "a static alfred-forward (CGO_ENABLED=0 go build ./cmd/alfred-forward) bind-mounted read-only into sealed containers; empty: the agent image's /usr/local/bin/alfred-forward",
		set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "/") {
				return fmt.Errorf("%q is not an absolute path", v)
			}
			c.GatewayForwarder = v
			return nil
		}, get: func(c *Config) string { return c.GatewayForwarder }},
}

// Sealing tells whether the model gateway is on: ALFRED_GATEWAY on, or
// auto with a runner other than host.
func (c *Config) Sealing() bool {
	return c.Gateway == "on" || c.Gateway == "auto" && c.Runner != "host"
}

// FileFlag and FileEnv name the optional configuration file: lines of
// ALFRED_NAME=value (as in a systemd EnvironmentFile), '#' comments allowed.
const (
	FileFlag = "config"
	FileEnv  = "ALFRED_CONFIG"
)

// Load builds the configuration of a subcommand from, in rising precedence,
// the defaults, the optional file, the environment and the command-line
// flags. args are the subcommand's arguments; lookupEnv is os.LookupEnv in
// production; kinds are the forge kinds ALFRED_FORGE accepts, with what is
// checked of each (forges/setup registers them). The first invalid value
// stops it with an error naming the setting and what it accepts.
func Load(name string, args []string, lookupEnv func(string) (string, bool), stderr io.Writer, kinds []ForgeKind) (*Config, error) {
	c, rest, err := LoadWith(name, args, lookupEnv, stderr, kinds, nil)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q", rest[0])
	}
	return c, err
}

// LoadWith is Load for subcommands with flags of their own (added by extra)
// and positional arguments, which it returns. Flags may come before, between
// or after the positional arguments.
func LoadWith(name string, args []string, lookupEnv func(string) (string, bool), stderr io.Writer, kinds []ForgeKind, extra func(*flag.FlagSet)) (*Config, []string, error) {
	fs, file, given := flagSet(name, stderr, kinds, extra)
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, nil, err
	}
	path := *file
	if path == "" {
		path, _ = lookupEnv(FileEnv)
	}
	values, sections, err := gather(path, lookupEnv, fs, given)
	if err != nil {
		return nil, nil, err
	}
	c := &Config{kinds: kinds}
	for _, s := range Settings {
		if err := s.set(c, strings.TrimSpace(values[s.Env])); err != nil {
			return nil, nil, fmt.Errorf("setting %s (flag -%s): %w; it accepts %s", s.Env, s.Flag, err, s.accepts(kinds))
		}
	}
	for _, sec := range sections {
		f, err := sec.forge(lookupEnv, kinds)
		if err != nil {
			return nil, nil, err
		}
		c.Forges = append(c.Forges, f)
	}
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	return c, positional, nil
}

// flagSet declares a flag per setting, the -config flag and extra's.
func flagSet(name string, stderr io.Writer, kinds []ForgeKind, extra func(*flag.FlagSet)) (*flag.FlagSet, *string, map[string]*string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String(FileFlag, "", "optional configuration file of ALFRED_NAME=value lines (env "+FileEnv+")")
	given := make(map[string]*string, len(Settings))
	for _, s := range Settings {
		v := new(string)
		given[s.Flag] = v
		help := fmt.Sprintf("%s (env %s; %s)", s.Help, s.Env, s.accepts(kinds))
		if s.Secret {
			help += " — prefer the variable: flags show in process lists"
		}
		fs.Func(s.Flag, help, func(x string) error { *v = x; return nil })
	}
	if extra != nil {
		extra(fs)
	}
	return fs, file, given
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, which it returns.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// gather is every setting's value by variable, in rising precedence: the
// default, the file at path (when set), the environment, the flags given;
// and the file's [forge NAME] sections.
func gather(path string, lookupEnv func(string) (string, bool), fs *flag.FlagSet, given map[string]*string) (map[string]string, []section, error) {
	values := make(map[string]string, len(Settings))
	for _, s := range Settings {
		values[s.Env] = s.Default
	}
	var sections []section
	if path != "" {
		fromFile, secs, err := readFile(path)
		if err != nil {
			return nil, nil, err
		}
		sections = secs
		maps.Copy(values, fromFile)
	}
	for _, s := range Settings {
		if v, ok := lookupEnv(s.Env); ok {
			values[s.Env] = v
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if v, ok := given[f.Name]; ok {
			for _, s := range Settings {
				if s.Flag == f.Name {
					values[s.Env] = *v
				}
			}
		}
	})
	return values, sections, nil
}

func (c *Config) check() error {
	if c.MetricsListen != "" && c.MetricsListen == c.Listen {
		return fmt.Errorf("setting ALFRED_METRICS_LISTEN: %s is ALFRED_LISTEN's address; leave it empty to serve /metrics there", c.MetricsListen)
	}
	if c.Gateway == "on" && c.Runner == "host" {
		return fmt.Errorf("setting ALFRED_GATEWAY: on needs ALFRED_RUNNER image or kubernetes (a host process cannot be sealed)")
	}
	if c.Forge.Name == "" {
		c.Forge.Name = c.Forge.Kind
	}
	if (c.Forge.OAuthClientID == "") != (c.Forge.OAuthClientSecret == "") {
		return fmt.Errorf("settings ALFRED_OAUTH_CLIENT_ID and ALFRED_OAUTH_CLIENT_SECRET: set both or neither")
	}
	if c.Forge.Kind != "" {
		if err := c.Forge.check("setting ", c.kinds); err != nil {
			return err
		}
	}
	forges := c.Forges
	c.Forges = nil
	if c.Forge.Kind != "" {
		c.Forges = append(c.Forges, c.Forge)
	}
	for _, f := range forges {
		if i := slices.IndexFunc(c.Forges, func(g Forge) bool { return g.Name == f.Name }); i >= 0 {
			return fmt.Errorf("configuration: two forges are named %q: each needs its own name (its records and webhook URL /webhooks/%s carry it)", f.Name, f.Name)
		}
		c.Forges = append(c.Forges, f)
	}
	return nil
}

// check reports what is missing or contradictory in one forge's settings;
// where prefixes the settings' names ("setting ", "[forge x] "). Its kind
// is one of kinds or empty (setKind).
func (f Forge) check(where string, kinds []ForgeKind) error {
	if f.Kind == "" {
		return fmt.Errorf("%sALFRED_FORGE: required; it accepts %s", where, kindNames(kinds, anyKind))
	}
	k, _ := kindNamed(kinds, f.Kind)
	if f.URL == "" && !k.URLOptional {
		return fmt.Errorf("%sALFRED_FORGE_URL: required when ALFRED_FORGE is %s; it accepts the forge's base http(s) URL", where, f.Kind)
	}
	if (f.OAuthClientID == "") != (f.OAuthClientSecret == "") {
		return fmt.Errorf("%sALFRED_OAUTH_CLIENT_ID and ALFRED_OAUTH_CLIENT_SECRET: set both or neither", where)
	}
	return f.checkApp(where, k, kinds)
}

// checkApp checks the App settings: a kind with an App mode, an id with its
// key, and no token beside them.
func (f Forge) checkApp(where string, k ForgeKind, kinds []ForgeKind) error {
	switch {
	case f.AppID == 0 && f.AppKeyFile == "" && f.AppInstallation == 0:
		return nil
	case !k.App:
		apps := kindNames(kinds, func(k ForgeKind) bool { return k.App })
		return fmt.Errorf("%sALFRED_GITHUB_APP_ID: GitHub App mode is for ALFRED_FORGE=%s, not %s", where, apps, f.Kind)
	case f.AppID == 0 || f.AppKeyFile == "":
		return fmt.Errorf("%sALFRED_GITHUB_APP_ID and ALFRED_GITHUB_APP_KEY_FILE: set both for GitHub App mode", where)
	case f.Token != "":
		return fmt.Errorf("%sALFRED_FORGE_TOKEN: leave it empty in GitHub App mode (the App's installation tokens replace it)", where)
	}
	return nil
}

// ForgeNamed is the forge called name, or, for "", the only forge.
func (c *Config) ForgeNamed(name string) (Forge, error) {
	var names []string
	for _, f := range c.Forges {
		if f.Name == name || name == "" && len(c.Forges) == 1 {
			return f, nil
		}
		names = append(names, f.Name)
	}
	switch {
	case len(names) == 0:
		return Forge{}, errors.New(c.noForge())
	case name == "":
		return Forge{}, fmt.Errorf("several forges are configured (%s): name one, as NAME:OWNER/PROJECT", strings.Join(names, ", "))
	}
	return Forge{}, fmt.Errorf("no forge is named %q (configured: %s)", name, strings.Join(names, ", "))
}

// Ignored names the settings of one forge that are set while ALFRED_FORGE
// is not: they belong to no forge (a [forge NAME] section has its own).
func (c *Config) Ignored() []string {
	if c.Forge.Kind != "" {
		return nil
	}
	var out []string
	for _, st := range Settings {
		if st.PerForge && st.Env != "ALFRED_FORGE" && st.get(c) != st.Default {
			out = append(out, st.Env)
		}
	}
	return out
}

// Missing lists, in plain words, what a working bot still needs. The home page
// shows it; an empty list means the bot can take issues.
func (c *Config) Missing() []string {
	if len(c.Forges) == 0 {
		return []string{c.noForge()}
	}
	var m []string
	for _, f := range c.Forges {
		of := ""
		if len(c.Forges) > 1 {
			of = " of forge " + f.Name
		}
		if f.Token == "" && f.AppID == 0 {
			m = append(m, "no forge token"+of+": set ALFRED_FORGE_TOKEN to a token of the bot's account")
		}
		if len(f.WebhookSecrets) == 0 {
			m = append(m, "no webhook secret"+of+": set ALFRED_WEBHOOK_SECRETS; webhooks are refused until then")
		}
	}
	return m
}

// Describe lists every setting with its value, secrets shown only as set or not.
func (c *Config) Describe() []Entry {
	out := make([]Entry, 0, len(Settings))
	for _, s := range Settings {
		v := s.get(c)
		if s.Secret {
			if v == "" {
				v = "(not set)"
			} else {
				v = "(set, hidden)"
			}
		}
		out = append(out, Entry{Name: s.Env, Value: v, Default: v == s.Default})
	}
	return out
}

// Entry is one line of Describe.
type Entry struct {
	Name    string
	Value   string
	Default bool
}

// section is a [forge NAME] section of the configuration file: the
// settings of one more forge.
type section struct {
	name   string
	values map[string]string
}

// forge builds the section's forge. A value may name variables of the
// environment ($NAME or ${NAME}), so that secrets stay out of the file.
func (sec section) forge(lookupEnv func(string) (string, bool), kinds []ForgeKind) (Forge, error) {
	tmp := &Config{kinds: kinds}
	where := "[forge " + sec.name + "] "
	for _, st := range Settings {
		if !st.PerForge {
			continue
		}
		v := os.Expand(sec.values[st.Env], func(k string) string { v, _ := lookupEnv(k); return v })
		if err := st.set(tmp, strings.TrimSpace(v)); err != nil {
			return Forge{}, fmt.Errorf("configuration file, %s%s: %w; it accepts %s", where, st.Env, err, st.accepts(kinds))
		}
	}
	if tmp.Forge.Name != "" && tmp.Forge.Name != sec.name {
		return Forge{}, fmt.Errorf("configuration file, %sALFRED_FORGE_NAME: the section names the forge already", where)
	}
	tmp.Forge.Name = sec.name
	return tmp.Forge, tmp.Forge.check("configuration file, "+where, kinds)
}

// readFile reads the configuration file: settings before the first section,
// and the [forge NAME] sections.
func readFile(path string) (map[string]string, []section, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("configuration file: %w", err)
	}
	defer f.Close()
	out, sections := map[string]string{}, []section(nil)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := func(format string, args ...any) error {
			return fmt.Errorf("configuration file %s line %d: %s", path, n, fmt.Sprintf(format, args...))
		}
		if strings.HasPrefix(line, "[") {
			sec, err := sectionHeader(line)
			if err != nil {
				return nil, nil, where("%v", err)
			}
			sections = append(sections, sec)
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(strings.TrimPrefix(k, "export "))
		st, known := settingOf(k)
		switch {
		case !ok:
			return nil, nil, where("want NAME=value")
		case !known:
			return nil, nil, where("unknown setting %s (known: %s)", k, strings.Join(envNames(), ", "))
		case len(sections) > 0 && !st.PerForge:
			return nil, nil, where("%s is not a setting of one forge: put it before the first [forge ...] section", k)
		case len(sections) > 0:
			sections[len(sections)-1].values[k] = unquote(strings.TrimSpace(v))
		default:
			out[k] = unquote(strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	return out, sections, nil
}

// sectionHeader reads "[forge NAME]".
func sectionHeader(line string) (section, error) {
	inner, ok := strings.CutSuffix(strings.TrimPrefix(line, "["), "]")
	kind, name, _ := strings.Cut(strings.TrimSpace(inner), " ")
	if !ok || kind != "forge" {
		return section{}, fmt.Errorf("want a section [forge NAME], not %s", line)
	}
	sec := section{values: map[string]string{}}
	if err := setName(&sec.name, strings.TrimSpace(name)); err != nil || sec.name == "" {
		return section{}, fmt.Errorf("section %s: the forge's name must be letters, digits, '-' or '_'", line)
	}
	return sec, nil
}

// settingOf finds the setting of variable env.
func settingOf(env string) (Setting, bool) {
	for _, s := range Settings {
		if s.Env == env {
			return s, true
		}
	}
	return Setting{}, false
}

func envNames() []string {
	n := make([]string, 0, len(Settings))
	for _, s := range Settings {
		n = append(n, s.Env)
	}
	sort.Strings(n)
	return n
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var errEmpty = errors.New("empty value")

func setNonEmpty(dst *string, v string) error {
	if v == "" {
		return errEmpty
	}
	*dst = v
	return nil
}

func setOneOf(dst *string, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("%q is not allowed", v)
}

func setHostPort(dst *string, v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", v, port)
	}
	*dst = v
	return nil
}

func setURL(dst *string, v string, emptyOK bool) error {
	if v == "" && emptyOK {
		*dst = ""
		return nil
	}
	if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") || len(v) <= len("https://") {
		return fmt.Errorf("%q is not an http(s) URL", v)
	}
	*dst = strings.TrimRight(v, "/")
	return nil
}

// setRemote accepts a git URL: http(s) and ssh URLs, file URLs and paths,
// and the scp-like [user@]host:path.
func setRemote(c *Config, v string) error {
	switch {
	case v == "":
	case strings.HasPrefix(v, "http://"), strings.HasPrefix(v, "https://"):
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return errors.New("not a URL")
		}
	case strings.HasPrefix(v, "ssh://"), strings.HasPrefix(v, "file://"), strings.HasPrefix(v, "/"):
	case strings.Contains(v, ":") && !strings.Contains(v, "://") && !strings.HasPrefix(v, ":"):
	default:
		return errors.New("not a git URL")
	}
	c.StateRemote = v
	return nil
}

func setDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration", v)
	}
	if d <= 0 {
		return fmt.Errorf("%q is not positive", v)
	}
	*dst = d
	return nil
}

// setID reads a positive numeric id; empty is none (0).
func setID(dst *int64, v string) error {
	if v == "" {
		*dst = 0
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a positive whole number", v)
	}
	*dst = n
	return nil
}

func idString(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

func setInt(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%q is out of range", v)
	}
	*dst = n
	return nil
}

func setUser(c *Config, v string) error {
	u, g, ok := strings.Cut(v, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return fmt.Errorf("%q is not a non-root uid:gid", v)
	}
	c.AgentUID, c.AgentGID = uid, gid
	return nil
}

func setName(dst *string, v string) error {
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%q has the character %q", v, r)
		}
	}
	*dst = v
	return nil
}

// Reference writes the catalogue as the Markdown table of the README's
// configuration reference (`alfred config reference`).
func Reference(w io.Writer, kinds []ForgeKind) error {
	var b strings.Builder
	b.WriteString("| variable | flag | default | accepts | what it does |\n|---|---|---|---|---|\n")
	for _, s := range Settings {
		def := "`" + s.Default + "`"
		if s.Default == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | `-%s` | %s | %s | %s |\n", s.Env, s.Flag, def, s.accepts(kinds), s.Help)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func setDurationOrZero(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration", v)
	}
	if d < 0 {
		return fmt.Errorf("%q is negative", v)
	}
	*dst = d
	return nil
}

// setRanges reads ALFRED_AGENT_VERIFIED_RANGES: adapter=constraint entries
// separated by ';', since a Masterminds constraint may hold ',' and "||".
func setRanges(c *Config, v string) error {
	out := map[string]string{}
	for _, entry := range strings.Split(v, ";") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		id, rng, ok := strings.Cut(entry, "=")
		id, rng = strings.TrimSpace(id), strings.TrimSpace(rng)
		if !ok || id == "" || rng == "" {
			return fmt.Errorf("%q: want adapter=constraint", entry)
		}
		if err := setName(new(string), id); err != nil {
			return fmt.Errorf("%q: want adapter=constraint, and adapter id %w", entry, err)
		}
		if _, dup := out[id]; dup {
			return fmt.Errorf("adapter %s is given twice", id)
		}
		if _, err := semver.NewConstraint(rng); err != nil {
			return fmt.Errorf("adapter %s: %q is not a semver constraint: %w", id, rng, err)
		}
		out[id] = rng
	}
	c.AgentVerifiedRanges = out
	return nil
}

func joinRanges(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, id := range sortedKeys(m) {
		parts = append(parts, id+"="+m[id])
	}
	return strings.Join(parts, ";")
}

// CheckVerifiedRanges refuses a range given for an adapter that is not among
// known (the ids of the agent CLIs Alfred drives): the configuration package
// does not know them, the caller does.
func (c *Config) CheckVerifiedRanges(known []string) error {
	for _, id := range sortedKeys(c.AgentVerifiedRanges) {
		if !slices.Contains(known, id) {
			return fmt.Errorf("setting ALFRED_AGENT_VERIFIED_RANGES: unknown adapter %q; it accepts ranges for %s", id, strings.Join(known, ", "))
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Kube is the kubernetes runner's cluster and what its Pods ask for.
type Kube struct {
	Config        string // kubeconfig file; empty: in-cluster
	Namespace     string // empty: the bot's own namespace
	CPURequest    string // a Kubernetes quantity
	MemoryRequest string
}

// setQuantity takes a Kubernetes resource quantity (100m, 0.5, 256Mi, 1G).
func setQuantity(dst *string, v string) error {
	if _, err := resource.ParseQuantity(v); err != nil {
		return fmt.Errorf("%q is not a Kubernetes quantity such as 250m or 512Mi", v)
	}
	*dst = v
	return nil
}
