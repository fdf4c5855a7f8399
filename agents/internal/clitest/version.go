package clitest

import (
	"context"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// RealVersion detects the real binary exe of cli on the host runner, as
// `alfred agents detect` does: the version must be pinned, inside the CLI's
// verified range, and never resumable on the host.
func RealVersion(t *testing.T, cli agents.CLI, exe, pinned string) {
	t.Helper()
	RealVersionIn(t, Bin(t, exe), cli, pinned)
}

// RealVersionIn is RealVersion with the CLI of the folder bin (an Install's).
func RealVersionIn(t *testing.T, bin string, cli agents.CLI, pinned string) {
	t.Helper()
	inst := agents.Detect(context.Background(), Host(t), sandbox.Spec{Env: Env(bin, nil)}, []agents.CLI{cli}, nil)
	if len(inst) != 1 || inst[0].Error != "" || inst[0].Version != pinned {
		t.Fatalf("Detect = %+v, want the pinned version %s", inst, pinned)
	}
	d := cli.Descriptor()
	c, err := semver.NewConstraint(d.VerifiedRange)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Check(semver.MustParse(pinned)) {
		t.Fatalf("pinned version %s outside the verified range %s", pinned, d.VerifiedRange)
	}
	if inst[0].ResumableSessions {
		t.Fatalf("Detect on the host runner = %+v, want resumable_sessions false", inst[0])
	}
	if d.Capabilities().ResumableSessions && !strings.Contains(inst[0].Reason, "host") {
		t.Fatalf("Detect reason = %q, want it to name the host runner", inst[0].Reason)
	}
}
