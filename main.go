// Command alfred is a self-hosted, forge-native bot that works issues with
// coding-agent CLIs in sandboxed containers. This package only parses flags
// and wires the other packages together, one file per command word: main.go
// (the words, the logger), serve.go and wiring.go, state.go, settings.go,
// labels.go, agents.go, doctor.go, session.go, config.go and replay.go; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/setup"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `alfred: a forge-native bot that works issues with coding-agent CLIs

Usage:
  alfred serve [flags]                        serve webhooks and pages (alfred serve -h lists the flags)
  alfred labels sync -project OWNER/NAME      create, rename or update the status, ai:: and type:: labels
  alfred agents detect [--refresh]            detect the agent CLIs on the configured runner
                                              (--refresh: the server detects again and records it)
  alfred doctor [-project OWNER/NAME]...      check the whole setup, one OK/FAIL line each
  alfred state log [-n N] [MAILBOX]           the state branch's history, newest first, or the
                                              audit history of one mailbox (forge/owner/project/issue/N)
  alfred state show PATH                      one record of the state branch
  alfred state verify                         git fsck, then every record and index entry
  alfred state export [-o FILE]               every record as JSON lines
  alfred state compact [-keep N] [-archive]   bound the history and repack (server stopped)
  alfred session export -project OWNER/NAME -issue N [-adapter ID] [-o FILE]
                                              the issue's agent session, secrets scrubbed, and
                                              the command that continues it on your machine
  alfred settings get KEY -project OWNER/NAME the effective value of a per-project setting
  alfred settings set KEY VALUE (-org OWNER | -project OWNER/NAME)
  alfred settings unset KEY (-org OWNER | -project OWNER/NAME)
  alfred settings list                        the per-project settings, and the overrides in the
                                              state branch (flagging unknown or ill-typed ones)
  alfred replay -corpus DIR [-adapter A,B] [-model M] [-o FILE]
                                              replay recorded issues through the engine on a
                                              Forgejo or Gitea (admin token in ALFRED_REPLAY_ADMIN_TOKEN)
                                              and report the outcome figures per adapter
  alfred config reference                     the reference of the configuration and of the
                                              per-project settings (Markdown)
  alfred version                              the version

Every subcommand reads the flags of 'alfred serve' (forge, state, runner...), the
ALFRED_* variables and the optional -config file.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, rest, stderr)
	case "labels":
		err = sub(rest, map[string]func([]string) error{
			"sync": func(a []string) error { return labelsSync(ctx, a, stdout, stderr) },
		})
	case "agents":
		err = sub(rest, map[string]func([]string) error{
			"detect": func(a []string) error { return agentsDetect(ctx, a, stdout, stderr) },
		})
	case "state":
		err = sub(rest, map[string]func([]string) error{
			"log":     func(a []string) error { return stateLog(ctx, a, stdout, stderr) },
			"show":    func(a []string) error { return stateShow(ctx, a, stdout, stderr) },
			"verify":  func(a []string) error { return stateVerify(ctx, a, stdout, stderr) },
			"export":  func(a []string) error { return stateExport(ctx, a, stdout, stderr) },
			"compact": func(a []string) error { return stateCompact(ctx, a, stdout, stderr) },
		})
	case "session":
		err = sub(rest, map[string]func([]string) error{
			"export": func(a []string) error { return sessionExport(ctx, a, stdout, stderr) },
		})
	case "settings":
		err = sub(rest, map[string]func([]string) error{
			"get":   func(a []string) error { return settingsGet(ctx, a, stdout, stderr) },
			"set":   func(a []string) error { return settingsSet(ctx, a, stdout, stderr, true) },
			"unset": func(a []string) error { return settingsSet(ctx, a, stdout, stderr, false) },
			"list":  func(a []string) error { return settingsList(ctx, a, stdout, stderr) },
		})
	case "config":
		err = sub(rest, map[string]func([]string) error{
			"reference": func([]string) error { return configReference(stdout) },
		})
	case "doctor":
		err = doctorCmd(ctx, rest, stdout, stderr)
	case "replay":
		err = replayCmd(ctx, rest, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = errUsage(fmt.Sprintf("unknown command %q", cmd))
	}
	var ue errUsage
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "alfred: %s\n\n%s", ue, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "alfred %s: %v\n", cmd, err)
		return 1
	}
}

// errUsage is a command line that does not parse.
type errUsage string

func (e errUsage) Error() string { return string(e) }

// sub dispatches a subcommand's own subcommand.
func sub(args []string, cmds map[string]func([]string) error) error {
	if len(args) == 0 {
		return errUsage("missing subcommand")
	}
	f, ok := cmds[args[0]]
	if !ok {
		return errUsage(fmt.Sprintf("unknown subcommand %q", args[0]))
	}
	return f(args[1:])
}

func newLogger(c *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// load reads the configuration of a subcommand with its own flags.
func load(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*config.Config, []string, error) {
	return config.LoadWith(name, args, os.LookupEnv, stderr, setup.ConfigKinds(), extra)
}

// parseProject reads OWNER/NAME (OWNER may be a GitLab group path).
func parseProject(c *config.Config, s string) (forges.Project, config.Forge, error) {
	name, path, ok := strings.Cut(s, ":")
	if !ok {
		name, path = "", s
	}
	f, err := c.ForgeNamed(name)
	if err != nil {
		return forges.Project{}, f, errUsage(fmt.Sprintf("-project %q: %v", s, err))
	}
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return forges.Project{}, f, errUsage(fmt.Sprintf("-project %q: want [FORGE:]OWNER/NAME", s))
	}
	return forges.Project{Forge: f.Name, Owner: path[:i], Name: path[i+1:]}, f, nil
}
