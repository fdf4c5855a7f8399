package sandbox

import (
	"slices"
	"testing"
)

// TestHomeParents: every folder between HOME and a mount under it is a
// tmpfs of the user, once, whatever the mount (a session, a credential
// mount, a file its adapter writes): a runtime would make it root's, and the
// CLI could not write beside what is mounted. A mount right under HOME, or
// outside it, needs none.
func TestHomeParents(t *testing.T) {
	settings := Mount{Host: "/srv/run.home/0-settings.json", Container: AgentHome + "/.gemini/settings.json"}
	deep := Mount{Host: "/srv/creds/token", Container: AgentHome + "/.config/gh/hosts.yml"}
	top := Mount{Host: "/srv/creds/.netrc", Container: AgentHome + "/.netrc"}
	outside := Mount{Host: "/srv/tools", Container: "/opt/tools"}
	session := &Mount{Host: "/srv/sessions/x", Container: AgentHome + "/.gemini/tmp"}
	for _, tc := range []struct {
		name    string
		creds   []Mount
		session *Mount
		want    []string // the tmpfs folders besides HOME
	}{
		{"a session", nil, session, []string{AgentHome + "/.gemini"}},
		{"a file its adapter writes", []Mount{settings}, nil, []string{AgentHome + "/.gemini"}},
		{"both in one folder", []Mount{settings}, session, []string{AgentHome + "/.gemini"}},
		{"deeper", []Mount{deep}, nil, []string{AgentHome + "/.config/gh", AgentHome + "/.config"}},
		{"right under HOME, and outside it", []Mount{top, outside}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Credentials: tc.creds, Session: tc.session}
			l, err := ContainerLayout(spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tm := range l.Tmpfs {
				switch tm.Kind {
				case KindHome:
				case KindHomeParent:
					if tm.Mode != 0o700 {
						t.Errorf("%s: mode %o", tm.Path, tm.Mode)
					}
					got = append(got, tm.Path)
				default:
					t.Errorf("unexpected tmpfs %+v", tm)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tmpfs folders %q, want %q", got, tc.want)
			}
		})
	}
}
