package agents

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/alchemic-studio/alfred/sandbox"
)

// DetectTimeout bounds one version command when the base spec has no timeout.
const DetectTimeout = time.Minute

// Installation is a CLI found in an image or on the host.
type Installation struct {
	AdapterID string `json:"adapter_id"`
	Runner    string `json:"runner"`          // "image" or "host"
	Image     string `json:"image,omitempty"` // image runner only
	Version   string `json:"version,omitempty"`
	// VerifiedRange is the range the version was checked against (the
	// adapter's own, or the configured override).
	VerifiedRange string `json:"verified_range"`
	// ResumableSessions is the adapter's capability and the version inside
	// VerifiedRange, on the image runner. Always false on the host runner.
	ResumableSessions bool `json:"resumable_sessions"`
	// Reason says why ResumableSessions is false.
	Reason string `json:"reason,omitempty"`
	// Error is set when the CLI could not be run or its version not read:
	// Reason is then ReasonNotInstalled, or ReasonBroken when the CLI is
	// there but fails (exits with an error or hangs).
	Error string `json:"error,omitempty"`
}

// Why a detection found no usable CLI.
const (
	ReasonNotInstalled = "not installed"
	ReasonBroken       = "installed but does not start" // e.g. a Node.js too old for it
)

// Installed reports whether the version command worked.
func (i Installation) Installed() bool { return i.Error == "" && i.Version != "" }

// Broken reports whether the CLI is there but its version command failed.
func (i Installation) Broken() bool { return i.Reason == ReasonBroken }

// Detect runs each CLI's version command through runner (base gives the image,
// user, environment offered and workdir) and reports what it found. ranges
// overrides VerifiedRange per adapter id (configuration); nil keeps them all.
func Detect(ctx context.Context, runner sandbox.Runner, base sandbox.Spec, clis []CLI, ranges map[string]string) []Installation {
	out := make([]Installation, 0, len(clis))
	for _, c := range clis {
		d := c.Descriptor()
		out = append(out, detectOne(ctx, runner, base, d, ranges[d.ID]))
	}
	return out
}

func detectOne(ctx context.Context, runner sandbox.Runner, base sandbox.Spec, d Descriptor, override string) Installation {
	inst := Installation{AdapterID: d.ID, Runner: runner.Name(), VerifiedRange: d.VerifiedRange}
	if sandbox.InContainer(runner.Name()) {
		inst.Image = base.Image
	}
	if override != "" {
		inst.VerifiedRange = override
	}
	spec := base
	spec.Argv = d.versionArgv()
	spec.Env = d.env(base.Env)
	spec.Session = nil
	spec.Stdin = nil
	if spec.Timeout <= 0 {
		spec.Timeout = DetectTimeout
	}
	res, err := runner.Run(ctx, spec)
	switch {
	case err != nil:
		inst.Error = fmt.Sprintf("run %s: %v", strings.Join(spec.Argv, " "), err)
	case res.Outcome != sandbox.OutcomeExited:
		inst.Error = fmt.Sprintf("%s: %s", strings.Join(spec.Argv, " "), res.Outcome)
	case res.ExitCode != 0:
		inst.Error = fmt.Sprintf("%s exited %d: %s", strings.Join(spec.Argv, " "), res.ExitCode, FirstLine(res.Stderr))
	}
	switch {
	case inst.Error != "" && (err == nil && res.ExitCode != notFound):
		inst.Reason = ReasonBroken
		return inst
	case inst.Error != "":
		inst.Reason = ReasonNotInstalled
		return inst
	}
	v, err := d.ParseVersion(res.Stdout, res.Stderr)
	if err != nil {
		inst.Error = fmt.Sprintf("read version: %v", err)
		inst.Reason = ReasonNotInstalled
		return inst
	}
	inst.Version = v.String()
	inst.ResumableSessions, inst.Reason = resumable(d.Capabilities(), runner.Name(), v, inst.VerifiedRange)
	return inst
}

// notFound is the exit status of a command that does not exist (sh, tini).
const notFound = 127

// resumable applies the rule: capability, image runner, version in range.
func resumable(caps Capabilities, runner string, v *semver.Version, rng string) (bool, string) {
	if !caps.ResumableSessions {
		return false, "the adapter does not resume sessions"
	}
	if !sandbox.InContainer(runner) {
		return false, "the " + runner + " runner never resumes sessions"
	}
	con, err := semver.NewConstraint(rng)
	if err != nil {
		return false, fmt.Sprintf("verified range %q: %v", rng, err)
	}
	if !con.Check(v) {
		return false, fmt.Sprintf("version %s is outside the verified range %s", v, rng)
	}
	return true, ""
}

// PrintInstallations writes one line per installation, for `alfred agents detect`.
func PrintInstallations(w io.Writer, insts []Installation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADAPTER\tRUNNER\tVERSION\tRESUMABLE\tVERIFIED RANGE\tREASON")
	for _, i := range insts {
		version, reason := i.Version, i.Reason
		if !i.Installed() {
			version, reason = "-", i.Reason+": "+i.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", i.AdapterID, i.Runner, version, i.ResumableSessions, i.VerifiedRange, reason)
	}
	return tw.Flush()
}

// DetectCommand is `alfred agents detect`: detect clis with runner and print
// the result to w.
func DetectCommand(ctx context.Context, w io.Writer, runner sandbox.Runner, base sandbox.Spec, clis []CLI, ranges map[string]string) error {
	if err := PrintInstallations(w, Detect(ctx, runner, base, clis, ranges)); err != nil {
		return fmt.Errorf("print installations: %w", err)
	}
	return nil
}
