// Package dockertest runs the docker CLI against the suite's private daemon
// (scripts/dockerd.sh), for the tests that check what a self-hoster runs: the
// built images and the containers of a deployment.
package dockertest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// CLI runs docker against the daemon at Host (a DOCKER_HOST URL).
type CLI struct{ Host string }

// Run runs docker with args and returns its standard output; the error
// carries the standard error. A command gets at most five minutes.
func (d CLI) Run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", append([]string{"-H", d.Host}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Must is Run, failing the test on an error.
func (d CLI) Must(t testing.TB, args ...string) string {
	t.Helper()
	out, err := d.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Labelled lists the ids of the containers, running or not, that carry
// label (key=value).
func (d CLI) Labelled(label string) ([]string, error) {
	out, err := d.Run("ps", "-aq", "--filter", "label="+label)
	return strings.Fields(out), err
}
