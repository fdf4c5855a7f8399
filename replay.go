package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/metrics"
	"github.com/alchemic-studio/alfred/replay"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// `alfred replay`: the corpus replayed through an engine started here, as
// serve starts it, with a state folder of its own.

// replayAdminTokenEnv names the variable of the forge admin's token the
// replay creates users, repositories and issues with.
const replayAdminTokenEnv = "ALFRED_REPLAY_ADMIN_TOKEN"

// replayFlags are the flags of `alfred replay` beside serve's.
type replayFlags struct {
	corpus, adapters, model, out, work      string
	hookListen, hookURL, person, checkImage string
	parallel                                int
}

func (f *replayFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.corpus, "corpus", "", "the corpus folder: one folder per case (case.json and repo/)")
	fs.StringVar(&f.adapters, "adapter", "claude-code", "the adapters to replay every case with, comma-separated")
	fs.StringVar(&f.model, "model", "", "the model each adapter is asked for (AGENT_MODEL; empty: the CLI's default)")
	fs.StringVar(&f.out, "o", "", "write the report as JSON to this file too")
	fs.StringVar(&f.work, "work", "", "the replay's own folder (state, data, checks); default a new temporary folder")
	fs.StringVar(&f.hookListen, "hook-listen", "127.0.0.1:0", "where the replay's engine takes the forge's webhooks")
	fs.StringVar(&f.hookURL, "hook-url", "", "the webhook URL the forge is given; default http://<hook-listen>/webhooks/<forge>")
	fs.StringVar(&f.person, "person", "", "the user who opens the issues and owns the repositories (default: the admin)")
	fs.StringVar(&f.checkImage, "check-image", "", "the image the checks run in (default ALFRED_AGENT_IMAGE)")
	fs.IntVar(&f.parallel, "parallel", 2, "cases worked at once")
}

// replayCmd is `alfred replay -corpus DIR`.
func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f replayFlags
	c, rest, err := load("replay", args, stderr, f.add)
	if err != nil {
		return err
	}
	if len(rest) > 0 || f.corpus == "" {
		return errUsage("replay takes -corpus DIR")
	}
	cases, err := replay.Load(f.corpus)
	if err != nil {
		return err
	}
	token := os.Getenv(replayAdminTokenEnv)
	if len(c.Forges) != 1 || c.Forges[0].Kind != string(forges.Forgejo) || token == "" {
		return fmt.Errorf("replay works on one Forgejo or Gitea forge (ALFRED_FORGE=forgejo, ALFRED_FORGE_URL, the bot's ALFRED_FORGE_TOKEN) with an admin's token in %s", replayAdminTokenEnv)
	}
	if err := ownFolders(c, &f); err != nil {
		return err
	}
	log := newLogger(c, stderr)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	st, err := state.Open(ctx, c.StateDir, state.Options{Logger: log})
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := replayWith(ctx, c, &f, st, cases, token, log)
	log.Info("replay ended: its state and data are kept", "folder", f.work)
	if werr := writeReport(rep, f.out, stdout); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// ownFolders gives the replay its own state and data folders (under -work,
// a new temporary folder by default), its own instance name on the Docker
// daemon (a start removes its instance's leftovers) and its own webhook
// secret when the forge has none.
func ownFolders(c *config.Config, f *replayFlags) error {
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if f.work == "" {
		dir, err := os.MkdirTemp("", "alfred-replay-")
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		f.work = dir
	}
	c.StateDir, c.DataDir = filepath.Join(f.work, "state.git"), filepath.Join(f.work, "data")
	for _, dir := range []string{c.StateDir, c.DataDir, filepath.Join(f.work, "checks")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	c.Instance += "-replay-" + hex.EncodeToString(suffix)
	if len(c.Forges[0].WebhookSecrets) == 0 {
		secret := make([]byte, 16)
		if _, err := rand.Read(secret); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		c.Forges[0].WebhookSecrets = []string{hex.EncodeToString(secret)}
	}
	return nil
}

// replayWith starts the engine on st, as serve does, with its webhook route
// on a listener of its own, and replays the cases through it.
func replayWith(ctx context.Context, c *config.Config, f *replayFlags, st *state.Store, cases []replay.Case, token string, log *slog.Logger) (replay.Report, error) {
	adapters, err := newAdapters(c)
	if err != nil {
		return replay.Report{}, err
	}
	var wanted []string
	for _, a := range strings.Split(f.adapters, ",") {
		wanted = append(wanted, strings.TrimSpace(a))
	}
	for _, a := range wanted {
		if _, ok := adapters[a]; !ok {
			return replay.Report{}, errUsage(fmt.Sprintf("-adapter: %q is not an adapter", a))
		}
	}
	ranges, err := verifiedRanges(c, adapters)
	if err != nil {
		return replay.Report{}, err
	}
	m := metrics.New(version)
	fs, err := connectForges(c, m)
	if err != nil {
		return replay.Report{}, err
	}
	me, err := fs[0].forge.Me(ctx)
	if err != nil {
		return replay.Report{}, fmt.Errorf("replay: who the bot is: %w", err)
	}
	r, hooks, follow := mux.NewRouter(), &webhookRoutes{}, &liveRuns{stopping: make(chan struct{})}
	det := agents.NewDetector(installations{st}, c.AgentDetectInterval, func() { m.PanicRecovered("detection") }, log)
	// The engine and its detection stop with the replay: its runs and a
	// detection still going are canceled, and what they left of the
	// replay's own instance on the daemon is removed (stop).
	checks, err := newRunner(ctx, c, log)
	if err != nil {
		return replay.Report{}, err
	}
	ectx, cancel := context.WithCancel(ctx)
	engine, err := startEngine(ectx, c, st, fs, adapters, ranges, det, follow, hooks, r, m, log)
	if err != nil {
		cancel()
		return replay.Report{}, err
	}
	defer stopReplay(cancel, engine, det, checks, log)
	cfg, err := replayConfig(ctx, c, f, st, fs[0], me.Login, token, checks)
	if err != nil {
		return replay.Report{}, err
	}
	ln, err := net.Listen("tcp", f.hookListen)
	if err != nil {
		return replay.Report{}, fmt.Errorf("replay: listen on %s: %w", f.hookListen, err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	cfg.Adapters, cfg.Hook.Secret, cfg.Log = wanted, c.Forges[0].WebhookSecrets[0], log
	if cfg.Hook.URL == "" {
		cfg.Hook.URL = "http://" + ln.Addr().String() + "/webhooks/" + fs[0].cfg.Name
	}
	return replay.Run(ctx, cfg, cases)
}

// stopReplay stops the replay's engine and its detection, then removes the
// containers its instance left: the instance is the replay's alone, no
// other bot's. (A container whose create a canceled run had asked for is
// removed by the runner itself.)
func stopReplay(cancel context.CancelFunc, engine *bot.Engine, det *agents.Detector, runner sandbox.Runner, log *slog.Logger) {
	cancel()
	engine.Close()
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	select {
	case <-det.Stopped():
	case <-ctx.Done():
		log.Warn("replay: the agent detection did not stop")
	}
	if err := removeLeftovers(ctx, runner); err != nil {
		log.Warn("replay: the sandboxes left behind", "err", err)
	}
}

// replayConfig is the replay's configuration: the forge as its admin, the
// bot's git, the checks' runner and image, the statuses a case ends at.
func replayConfig(ctx context.Context, c *config.Config, f *replayFlags, st *state.Store, fc connected, bot, token string, runner sandbox.Runner) (replay.Config, error) {
	site, err := replay.NewSite(ctx, replay.SiteOptions{URL: fc.cfg.URL, Token: token, Person: f.person})
	if err != nil {
		return replay.Config{}, err
	}
	image := f.checkImage
	if image == "" {
		image = c.AgentImage
	}
	return replay.Config{
		Site: site, Forge: fc.cfg.Name, Bot: bot, Hook: replay.Hook{URL: f.hookURL},
		Prepare: prepareReplay(st, fc, f.model), Records: st, Git: fc.forge, Runner: runner,
		CheckSpec: sandbox.Spec{Image: image, UID: c.AgentUID, GID: c.AgentGID,
			Env: map[string]string{"HOME": agents.AgentHome, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}},
		Stops:    append(lifecycle.StatusesWaiting(lifecycle.WaitsPerson), lifecycle.StatusesWaiting(lifecycle.WaitsNobody)...),
		Model:    f.model,
		Parallel: f.parallel, WorkDir: filepath.Join(f.work, "checks"),
	}, nil
}

// prepareReplay readies a replay's repository: the bot's labels, and the
// project's settings in the replay's state: the adapter, the model, and no
// plan validation (the issue goes to a pull request without a person).
func prepareReplay(st *state.Store, fc connected, model string) func(context.Context, forges.Project, string) error {
	return func(ctx context.Context, p forges.Project, adapter string) error {
		if _, _, err := forges.SyncLabels(ctx, fc.forge, p, labelCatalogue(fc.cfg)); err != nil {
			return err
		}
		set := map[string]string{bot.RequirePlanValidation.Key(): "false", bot.AgentAdapter.Key(): adapter}
		if model != "" {
			set[bot.AgentModel.Key()] = model
		}
		return st.Update(ctx, func(tx *state.Tx) error {
			for _, key := range slices.Sorted(maps.Keys(set)) {
				d, err := bot.LookupSetting(key)
				if err != nil {
					return err
				}
				canon, err := d.Parse(set[key])
				if err != nil {
					return fmt.Errorf("replay: %s: %w", key, err)
				}
				raw, _ := json.Marshal(canon)
				if err := tx.PutSetting(state.SettingOverride{Scope: state.ScopeProject, Forge: p.Forge, Owner: p.Owner, Project: p.Name,
					Key: key, Value: raw, UpdatedAt: time.Now()}); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// writeReport writes the report's tables on stdout and, with -o, its JSON.
func writeReport(rep replay.Report, out string, stdout io.Writer) error {
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	fh, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("replay report: %w", err)
	}
	if err := rep.WriteJSON(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
