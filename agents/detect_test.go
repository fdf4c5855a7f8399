package agents

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/sandbox"
)

// versionRunner answers every version command with out, under a runner name.
type versionRunner struct {
	name string
	out  string
	rc   int
	spec sandbox.Spec
}

func (r *versionRunner) Name() string { return r.name }
func (r *versionRunner) Run(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	r.spec = spec
	return &sandbox.Result{Outcome: sandbox.OutcomeExited, ExitCode: r.rc, Stdout: []byte(r.out), Stderr: []byte("boom\nmore")}, nil
}

func TestDetect(t *testing.T) {
	resumable := stubCLI{statePath: "/home/agent/.stub"}
	plain := stubCLI{}
	tests := []struct {
		name      string
		cli       CLI
		runner    *versionRunner
		ranges    map[string]string
		version   string
		resumable bool
		reason    string
	}{
		{"image in range", resumable, &versionRunner{name: "image", out: "stub 1.2.3\n"}, nil, "1.2.3", true, ""},
		{"image below range", resumable, &versionRunner{name: "image", out: "stub 0.9.0"}, nil, "0.9.0", false, "outside the verified range >=1.0.0"},
		{"range override", resumable, &versionRunner{name: "image", out: "stub 1.2.3"}, map[string]string{"stub": "<1.0.0"}, "1.2.3", false, "outside the verified range <1.0.0"},
		{"bad override", resumable, &versionRunner{name: "image", out: "stub 1.2.3"}, map[string]string{"stub": "not a range"}, "1.2.3", false, "verified range \"not a range\""},
		{"host never resumes", resumable, &versionRunner{name: "host", out: "stub 1.2.3"}, nil, "1.2.3", false, "host runner never resumes"},
		{"not capable", plain, &versionRunner{name: "image", out: "stub 1.2.3"}, nil, "1.2.3", false, "does not resume"},
		{"command fails", resumable, &versionRunner{name: "image", rc: 127}, nil, "", false, "not installed"},
		{"no version printed", resumable, &versionRunner{name: "image", out: "hello"}, nil, "", false, "not installed"},
		{"there but failing", resumable, &versionRunner{name: "image", rc: 1}, nil, "", false, "installed but does not start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := sandbox.Spec{Image: "agents:1", Env: map[string]string{"PATH": "/bin", "SECRET": "x"}}
			got := Detect(context.Background(), tt.runner, base, []CLI{tt.cli}, tt.ranges)[0]
			if got.Version != tt.version || got.ResumableSessions != tt.resumable || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("Detect = %+v, want version %q resumable %v reason ~%q", got, tt.version, tt.resumable, tt.reason)
			}
			if tt.version == "" && got.Error == "" {
				t.Fatalf("Detect = %+v, want an error", got)
			}
			if got.AdapterID != "stub" || got.Runner != tt.runner.name {
				t.Fatalf("Detect = %+v", got)
			}
			if _, ok := tt.runner.spec.Env["SECRET"]; ok || tt.runner.spec.Timeout != DetectTimeout || tt.runner.spec.Argv[1] != "--version" {
				t.Fatalf("version spec = %+v", tt.runner.spec)
			}
		})
	}
}

func TestDetectCommand(t *testing.T) {
	var buf bytes.Buffer
	cli := stubCLI{statePath: "/home/agent/.stub"}
	if err := DetectCommand(context.Background(), &buf, &versionRunner{name: "image", out: "1.2.3"}, sandbox.Spec{}, []CLI{cli}, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ADAPTER") || !strings.Contains(lines[1], "stub") ||
		!strings.Contains(lines[1], "1.2.3") || !strings.Contains(lines[1], "true") {
		t.Fatalf("output:\n%s", buf.String())
	}
}
