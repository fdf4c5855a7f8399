package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/sandbox"
)

// named is a sandbox runner that only has a name: Configure asks no more.
type named string

func (n named) Name() string { return string(n) }
func (named) Run(context.Context, sandbox.Spec) (*sandbox.Result, error) {
	panic("named runner: not for running")
}

// TestConfigure: the files a CLI needs in its home (Gemini's choice of
// authentication) are written by its adapter for the run's environment and
// mounted read-only in a container; an operator's credential mount at the
// same place wins; the host runner and a CLI that needs none get nothing.
func TestConfigure(t *testing.T) {
	gem, err := gemini.New()
	if err != nil {
		t.Fatal(err)
	}
	claude, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	operators := sandbox.Mount{Host: "/srv/creds/settings.json", Container: gemini.SettingsPath, ReadOnly: true}
	sealed := map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4000/gemini", "GEMINI_API_KEY": "run-token"}
	vertex := map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"}
	for _, tc := range []struct {
		name    string
		runner  string
		adapter agents.Adapter
		env     map[string]string
		creds   []sandbox.Mount
		want    string // the settings mounted; empty: no mount added
	}{
		{"sealed gemini in docker", "image", gem, sealed, nil, `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`},
		{"gemini on vertex in a pod", "kubernetes", gem, vertex, nil, `{"security":{"auth":{"selectedType":"vertex-ai"}}}`},
		{"gemini with no credential", "image", gem, map[string]string{"PATH": "/bin"}, nil, ""},
		{"the operator's settings win", "image", gem, sealed, []sandbox.Mount{operators}, ""},
		{"the operator's folder wins", "image", gem, sealed, []sandbox.Mount{{Host: "/srv/creds/gemini", Container: "/home/agent/.gemini", ReadOnly: true}}, ""},
		{"on the host runner", "host", gem, sealed, nil, ""},
		{"a CLI that needs none", "image", claude, map[string]string{"ANTHROPIC_API_KEY": "k"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{Sandbox: named(tc.runner)}
			dir := filepath.Join(t.TempDir(), "run.home")
			spec := sandbox.Spec{Env: tc.env, Credentials: tc.creds}
			if err := r.Configure(dir, tc.adapter, &spec); err != nil {
				t.Fatal(err)
			}
			added := spec.Credentials[len(tc.creds):]
			if tc.want == "" {
				if len(added) != 0 {
					t.Fatalf("mounts added %v; want none", added)
				}
				return
			}
			if len(added) != 1 || added[0].Container != gemini.SettingsPath || !added[0].ReadOnly {
				t.Fatalf("mounts added %v; want %s read-only", added, gemini.SettingsPath)
			}
			got, err := os.ReadFile(added[0].Host)
			if err != nil || string(got) != tc.want {
				t.Fatalf("settings %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
