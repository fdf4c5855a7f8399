package clitest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ResumeMissing runs the CLI's resume argv for id (a session that does not
// exist) with a clean environment plus extra, and returns what its
// classifier makes of the real output.
func ResumeMissing(t *testing.T, cli agents.CLI, bin, id string, extra map[string]string) (agents.FallbackReason, *sandbox.Result) {
	t.Helper()
	inv := agents.Invocation{Mode: agents.ModeResume, Prompt: "continue", Phase: agents.PhaseAnswer, SessionName: "agent/issue-1-x", SessionID: id}
	spec := sandbox.Spec{Argv: cli.Argv(inv), Env: Env(bin, extra), Workdir: t.TempDir(), Timeout: 2 * time.Minute}
	if cli.Descriptor().PromptOnStdin {
		spec.Stdin = strings.NewReader(inv.Prompt)
	}
	res, err := Host(t).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != sandbox.OutcomeExited {
		t.Fatalf("resume of a missing session: %s\nstdout: %s\nstderr: %s", res.Outcome, res.Stdout, res.Stderr)
	}
	return cli.Classify(res), res
}
