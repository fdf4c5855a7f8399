package views

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/config"
)

//go:embed templates/*.html
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

// pristine is a copy of templates that is never executed, so that it can be
// cloned (html/template refuses to clone an executed set).
var pristine = template.Must(templates.Clone())

// signedSet is a clone of the templates whose signOut gives token: the page
// of a signed-in person. Clones are reused through signedSets, one request
// at a time each, so a page costs no clone.
type signedSet struct {
	t     *template.Template
	token string
}

var signedSets = sync.Pool{New: func() any {
	s := &signedSet{}
	s.t = template.Must(pristine.Clone()).Funcs(template.FuncMap{"signOut": func() string { return s.token }})
	return s
}}

// Deps is what the pages need from the rest of the service.
type Deps struct {
	Version string
	Config  *config.Config
	// Ready reports whether the service can do its work (the state store is
	// open and writable); nil means always ready.
	Ready func(ctx context.Context) error
	// Notes tell what /readyz and the home page's health line add to the
	// readiness without it making the service unready (the state mirror
	// behind by N commits); nil: nothing.
	Notes  func() []string
	Logger *slog.Logger

	// Records serves the run, mailbox and agents pages; nil serves none.
	Records Records
	// Statuses are the lifecycle's statuses, by who they wait for; Phases
	// the agents' phases (the main package passes both: pages import
	// neither bot nor agents).
	Statuses Statuses
	Phases   []string
	// Agents are the adapters the engine has; Runner is "image" or "host".
	Agents []Agent
	Runner string
	// Secrets are hidden from every page, again.
	Secrets []string
	// Access guards the run, mailbox and agents pages; nil leaves them open.
	Access *Access
	// Live follows the output of the runs in progress (the engine): their
	// pages stream it; nil: they show what is recorded and refresh themselves.
	Live LiveRuns
	// Stopping, once closed, ends the live streams (the server shuts down:
	// it would wait for them otherwise); nil: never.
	Stopping <-chan struct{}
	// Redetect asks for a detection of the agent CLIs (the agents screen's
	// button, for Access.Admins); nil: this server detects nothing.
	Redetect func()
	// Settings tells a project's settings in force and where each comes
	// from (the project page); nil: the page shows none.
	Settings ProjectSettings
	// Clock is the time of the overview's durations and charts; nil: time.Now.
	Clock func() time.Time
	// Takeover offers a run's session to people with write access
	// (takeover.go); nil: the run page offers none.
	Takeover Takeover

	perms *permCache // the lists' permission cache, made by Register
	ready *readiness // the last readiness /readyz answered, made by Register
}

// Register adds the health probes and the pages to r.
func Register(r *mux.Router, d Deps) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	d.ready = &readiness{}
	r.HandleFunc("/healthz", healthz).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", d.readyz).Methods(http.MethodGet, http.MethodHead)
	d.perms = newPermCache(d.Clock)
	r.HandleFunc("/", d.overview).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/config", d.home).Methods(http.MethodGet, http.MethodHead)
	if d.Records == nil {
		return
	}
	get := []string{http.MethodGet, http.MethodHead}
	r.HandleFunc("/runs", d.runsPage).Methods(get...)
	r.HandleFunc("/projects/{forge}/{path:.+}", d.projectPage).Methods(get...)
	r.HandleFunc("/api/mailboxes", d.mailboxesJSON).Methods(get...)
	r.HandleFunc("/api/runs", d.runsJSON).Methods(get...)
	r.HandleFunc("/outcomes", d.outcomesPage).Methods(get...)
	r.HandleFunc("/api/outcomes", d.outcomesJSON).Methods(get...)
	r.HandleFunc("/api/projects/{forge}/{path:.+}", d.projectJSON).Methods(get...)
	if d.Access != nil {
		r.HandleFunc("/login", d.Access.loginPage).Methods(get...)
		r.HandleFunc("/oauth/callback", d.Access.callback).Methods(get...)
		r.HandleFunc("/logout", d.logout).Methods(http.MethodPost, http.MethodGet, http.MethodHead)
	}
	r.HandleFunc("/runs/{id}", d.runPage).Methods(get...)
	r.HandleFunc("/runs/{id}/live", d.runLive).Methods(http.MethodGet)
	r.HandleFunc("/runs/{id}/session.tar.gz", d.takeoverDownload).Methods(http.MethodGet)
	r.HandleFunc("/mailboxes/{id:.+}", d.mailboxPage).Methods(get...)
	r.HandleFunc("/agents", d.agentsPage).Methods(get...)
	if d.Redetect != nil {
		r.HandleFunc("/agents/detect", d.redetect).Methods(http.MethodPost)
	}
	r.HandleFunc("/api/runs/{id}", d.runJSON).Methods(get...)
	r.HandleFunc("/api/mailboxes/{id:.+}", d.mailboxJSON).Methods(get...)
	r.HandleFunc("/api/agents", d.agentsJSON).Methods(get...)
}

// healthz answers as long as the process serves HTTP.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// readyz answers 200 while the service can do its work and 503 with the
// reason while it cannot (the state store not writable, its writes
// failing); the notes follow on lines of their own either way. The log says
// when readiness changes, not at every probe.
func (d Deps) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	h := d.health(r.Context())
	d.ready.note(d.Logger, h.Err)
	var b strings.Builder
	if h.Err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		b.WriteString("not ready: " + h.Err.Error() + "\n")
	} else {
		b.WriteString("ready\n")
	}
	for _, n := range h.Notes {
		b.WriteString(n + "\n")
	}
	w.Write([]byte(b.String()))
}

// health is the service's readiness and its notes, for /readyz and the
// home page's health line.
type health struct {
	Err   error
	Notes []string
}

func (d Deps) health(ctx context.Context) health {
	var h health
	if d.Ready != nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		h.Err = d.Ready(ctx)
	}
	if d.Notes != nil {
		h.Notes = d.Notes()
	}
	return h
}

// readiness remembers whether the last answer was ready, to log changes only.
type readiness struct {
	mu       sync.Mutex
	notReady bool
}

func (r *readiness) note(log *slog.Logger, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil && !r.notReady:
		log.Warn("not ready", "err", err)
	case err == nil && r.notReady:
		log.Info("ready again")
	}
	r.notReady = err != nil
}

type homeData struct {
	Version string
	Missing []string
	Entries []config.Entry
	// Webhooks are the forges and the URL each delivers its webhooks to.
	Webhooks []webhookURL
}

type webhookURL struct{ Forge, Kind, URL, Path string }

// home is /config, the whole configuration (secrets hidden), for the
// admins only (configAllowed); anyone else gets hidden's 404.
func (d Deps) home(w http.ResponseWriter, r *http.Request) {
	if !d.configAllowed(r) {
		d.Logger.Info("configuration page refused", "remote", r.RemoteAddr)
		d.hidden(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	data := homeData{Version: d.Version}
	if d.Config != nil {
		data.Missing = d.Config.Missing()
		data.Entries = d.Config.Describe()
		for _, f := range d.Config.Forges {
			data.Webhooks = append(data.Webhooks, webhookURL{Forge: f.Name, Kind: f.Kind, URL: f.URL, Path: "/webhooks/" + f.Name})
		}
	}
	d.render(w, r, "config.html", data)
}

func render(w http.ResponseWriter, log *slog.Logger, name string, data any) {
	execute(w, log, templates, name, data)
}

// render renders a page for the person who asked: signed in, its header
// offers to sign out (a POST with the form's token).
func (d Deps) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	who := ""
	if d.Access != nil {
		who = d.Access.login(r)
	}
	if who == "" {
		render(w, d.Logger, name, data)
		return
	}
	set := signedSets.Get().(*signedSet)
	defer signedSets.Put(set)
	set.token = d.Access.csrfToken(who)
	execute(w, d.Logger, set.t, name, data)
}

func execute(w http.ResponseWriter, log *slog.Logger, t *template.Template, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.ExecuteTemplate(w, name, data); err != nil {
		log.Error("render page", "template", name, "err", err)
	}
}
