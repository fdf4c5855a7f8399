package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/alchemic-studio/alfred/internal/gitcmd"
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

// config is the git configuration of one command talking to the remote:
// its credential valid for the remote's origin alone.
func (r Remote) config() []string {
	c := []string{"http.lowSpeedLimit=1000", "http.lowSpeedTime=30", "core.fsync=all", "core.fsyncMethod=fsync"}
	if r.Password != "" && (strings.HasPrefix(r.URL, "http://") || strings.HasPrefix(r.URL, "https://")) {
		if cred, err := gitcmd.Credential(r.URL, r.Username, r.Password); err == nil {
			c = append(c, cred...)
		}
	}
	return c
}

// git runs one git command against the repository gitDir ("" for none),
// with config as settings of that command alone, through the hardened
// runner (internal/gitcmd). Its error carries git's stderr, scrubbed of r's
// credentials.
func git(ctx context.Context, r Remote, gitDir string, config []string, args ...string) (string, error) {
	c := gitcmd.Cmd{GitDir: gitDir, Config: config, Protocols: []string{"http", "https", "ssh"}}
	if r.Password != "" {
		c.Secrets = []string{r.Password, gitcmd.Basic(r.Username, r.Password)}
	}
	return gitcmd.Run(ctx, c, args...)
}
