package mirror

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Remote is where the state branch is mirrored and how to authenticate.
type Remote struct {
	// URL is the repository, never with userinfo: an http(s) URL, an ssh
	// URL (ssh://host/path or host:path, with the process's ssh setup), a
	// file:// URL or a path.
	URL      string
	Username string
	Password string // a token; secret
}

// ParseRemote reads ALFRED_STATE_REMOTE. The user:password of an http(s)
// URL moves out of it, into Username and Password; when the URL carries no
// password, user and password (the bot's forge credentials) are used.
func ParseRemote(raw, user, password string) (Remote, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Remote{}, errors.New("state remote: empty URL")
	}
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return Remote{URL: raw}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Remote{}, fmt.Errorf("state remote %s: not a URL", Redact(raw))
	}
	r := Remote{Username: user, Password: password}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			r.Username, r.Password = u.User.Username(), p
		} else if u.User.Username() != "" {
			r.Username = u.User.Username()
		}
		u.User = nil
	}
	r.URL = u.String()
	return r, nil
}

// Redact returns a URL without the userinfo it may carry (for logs and
// messages); what is not an http(s) URL comes back as it is.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw
	}
	u.User = nil
	return u.String()
}

func (r Remote) String() string { return r.URL }

// config is the git configuration of one command talking to the remote.
func (r Remote) config() []string {
	c := []string{"http.lowSpeedLimit=1000", "http.lowSpeedTime=30", "core.fsync=all", "core.fsyncMethod=fsync"}
	if r.Password != "" && (strings.HasPrefix(r.URL, "http://") || strings.HasPrefix(r.URL, "https://")) {
		c = append(c, "http.extraHeader=Authorization: Basic "+r.basic())
	}
	return c
}

func (r Remote) basic() string {
	return base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
}

// scrub removes the credentials from a text that may quote them.
func (r Remote) scrub(s string) string {
	if r.Password == "" {
		return s
	}
	s = strings.ReplaceAll(s, r.basic(), "***")
	return strings.ReplaceAll(s, r.Password, "***")
}

// inherited are the variables of the process a git command keeps: the
// network and ssh setup, neither git's own nor Alfred's (its secrets).
func inherited() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ALFRED_") || strings.HasPrefix(k, "GIT_") && k != "GIT_SSH_COMMAND" && k != "GIT_SSH" && k != "GIT_SSL_CAINFO" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// git runs one git command against the repository gitDir ("" for none),
// with config as GIT_CONFIG_* variables. Its error carries git's stderr,
// scrubbed of r's credentials.
func git(ctx context.Context, r Remote, gitDir string, config []string, args ...string) (string, error) {
	name := args[0]
	if gitDir != "" {
		args = append([]string{"--git-dir", gitDir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(inherited(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	if os.Getenv("GIT_SSH_COMMAND") == "" {
		cmd.Env = append(cmd.Env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	for i, kv := range config {
		k, v, _ := strings.Cut(kv, "=")
		n := strconv.Itoa(i)
		cmd.Env = append(cmd.Env, "GIT_CONFIG_KEY_"+n+"="+k, "GIT_CONFIG_VALUE_"+n+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		msg := r.scrub(strings.TrimSpace(stderr.String()))
		return stdout.String(), fmt.Errorf("git %s: %w: %s", name, err, msg)
	}
	return stdout.String(), nil
}
