// Package gitcmd runs the git command line for every part of Alfred that
// needs it, hardened: git reads no configuration but the repository's own
// (which only Alfred writes) and the settings of the one command, runs no
// hook, no fsmonitor, no credential helper, no pager and no ssh or askpass
// prompt, talks only the transports the caller allows, and never runs gc
// behind Alfred's back. Every command is an argv, never a shell; secrets
// travel in the environment of the one command that needs them
// (GIT_CONFIG_*), and git's stderr is scrubbed of them before it goes into
// an error.
//
// It owns no repository. It must never be pointed at a git directory an
// agent could write (docs/design.md, "The trust boundary"): the bot runs git
// on its own clones only, and reads an agent's files as data through a work
// tree.
package gitcmd

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Cmd is one git command.
type Cmd struct {
	// GitDir is the repository (--git-dir); "" runs git without one
	// (clone) or in Dir.
	GitDir string
	// WorkTree is the folder whose files git reads and writes
	// (--work-tree): data only, never a source of configuration.
	WorkTree string
	// Dir is the command's working directory.
	Dir string
	// Index is the index file (GIT_INDEX_FILE), for a private index.
	Index string
	// Config are "key=value" settings of this command alone.
	Config []string
	// Protocols are the transports git may use (protocol.<name>.allow);
	// none allows only local paths ("file").
	Protocols []string
	// Env are more variables of the command (GIT_AUTHOR_NAME, ...).
	Env []string
	// Secrets are hidden from the error's copy of stderr.
	Secrets []string
	// Stdin feeds the command.
	Stdin io.Reader
}

// hardening is the configuration every command gets after its own, so a
// caller cannot undo it by mistake.
var hardening = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.untrackedCache=false",
	"core.attributesFile=/dev/null",
	"core.excludesFile=/dev/null",
	"core.askPass=",
	"core.pager=cat",
	"credential.helper=",
	"gc.auto=0",
	"maintenance.auto=false",
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"push.recurseSubmodules=no",
	"protocol.allow=never",
}

// inherited are the variables of Alfred's process a git command keeps: the
// proxy and certificate setup, neither git's own nor Alfred's (its secrets).
// HOME is kept for ssh's own setup (~/.ssh); git's global configuration is
// off whatever HOME holds.
var inherited = []string{"PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSH_COMMAND", "GIT_SSH", "SSH_AUTH_SOCK", "TZ"}

// Run runs git with args and returns its stdout. Its error names the
// command and carries git's stderr, scrubbed of c.Secrets.
func Run(ctx context.Context, c Cmd, args ...string) (string, error) {
	var stdout bytes.Buffer
	err := RunTo(ctx, c, &stdout, args...)
	return stdout.String(), err
}

// RunTo runs git with args, writing its stdout to w.
func RunTo(ctx context.Context, c Cmd, w io.Writer, args ...string) error {
	if len(args) == 0 {
		return fmt.Errorf("git: no command")
	}
	var pre []string
	if c.GitDir != "" {
		pre = append(pre, "--git-dir", c.GitDir)
	}
	if c.WorkTree != "" {
		pre = append(pre, "--work-tree", c.WorkTree)
	}
	cmd := exec.CommandContext(ctx, "git", append(pre, args...)...)
	cmd.Dir = c.Dir
	cmd.Env = environment(c)
	cmd.Stdin = c.Stdin
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		msg := Scrub(strings.TrimSpace(stderr.String()), c.Secrets)
		return &Error{Command: args[0], Err: err, Stderr: msg}
	}
	return nil
}

// Error is a git command that failed.
type Error struct {
	Command string
	Err     error
	Stderr  string // scrubbed
}

func (e *Error) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("git %s: %v", e.Command, e.Err)
	}
	return fmt.Sprintf("git %s: %v: %s", e.Command, e.Err, e.Stderr)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is git's exit status, -1 when it did not exit.
func (e *Error) ExitCode() int {
	var x *exec.ExitError
	if !errors.As(e.Err, &x) {
		return -1
	}
	return x.ExitCode()
}

func environment(c Cmd) []string {
	env := []string{
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_OPTIONAL_LOCKS=0",
		"LC_ALL=C",
	}
	for _, k := range inherited {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("HOME"); !ok {
		env = append(env, "HOME="+os.TempDir())
	}
	if os.Getenv("GIT_SSH_COMMAND") == "" {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	if c.Index != "" {
		env = append(env, "GIT_INDEX_FILE="+c.Index)
	}
	env = append(env, c.Env...)
	config := append(append(append([]string(nil), c.Config...), hardening...), "protocol.file.allow=always")
	for _, p := range c.Protocols {
		config = append(config, "protocol."+p+".allow=always")
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, kv := range config {
		k, v, _ := strings.Cut(kv, "=")
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+k, "GIT_CONFIG_VALUE_"+n+"="+v)
	}
	return env
}

// Credential is the Basic authorization of one forge, for the one origin
// (scheme, host and port) of rawURL: git sends it to no other server, even
// when it follows a redirect or a remote elsewhere.
func Credential(rawURL, username, password string) ([]string, error) {
	if password == "" {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("git credential: %q is not an http(s) URL", Redact(rawURL))
	}
	origin := u.Scheme + "://" + u.Host + "/"
	return []string{"http." + origin + ".extraHeader=Authorization: Basic " + Basic(username, password)}, nil
}

// Basic is the value of a Basic authorization header.
func Basic(username, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
}

// Scrub hides each secret in s (pass a Basic encoding as one more secret).
func Scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, "***")
	}
	return s
}

// Redact drops the user information of a URL, for messages.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// Protocol is the transport of rawURL as protocol.<name>.allow names it.
func Protocol(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "" && len(u.Scheme) > 1 {
		return u.Scheme
	}
	if strings.Contains(rawURL, "@") && strings.Contains(rawURL, ":") {
		return "ssh" // scp-like user@host:path
	}
	return "file"
}
