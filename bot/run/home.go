package run

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// homeFiler is an adapter whose CLI needs configuration files in its home
// (agents.HomeConfigurer, through agents.Local).
type homeFiler interface {
	HomeFiles(offered map[string]string) map[string]string
}

// Configure writes the configuration files adapter's CLI needs in its home
// for the run's final environment (sealed or not: after Seal) into dir, a
// folder of the bot's that only this run uses, and mounts each read-only at
// its place in spec, beside the credential mounts. A credential mount of the
// operator's at the same place, or of a folder holding it, wins. The host runner mounts nothing: there
// the CLI's own home holds its configuration.
func (r *Runner) Configure(dir string, adapter agents.Adapter, spec *sandbox.Spec) error {
	h, ok := adapter.(homeFiler)
	if !ok || !sandbox.InContainer(r.Sandbox.Name()) {
		return nil
	}
	files := h.HomeFiles(spec.Env)
	if len(files) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("configuration of %s: %w", adapter.ID(), err)
	}
	creds := slices.Clone(spec.Credentials)
	for i, container := range slices.Sorted(maps.Keys(files)) {
		if slices.ContainsFunc(creds, func(m sandbox.Mount) bool { return sandbox.PathsOverlap(m.Container, container) }) {
			continue // the operator's mount of it, or of its folder, wins
		}
		// Readable by the container's user, whoever owns the folder.
		host := filepath.Join(dir, strconv.Itoa(i)+"-"+filepath.Base(container))
		if err := os.WriteFile(host, []byte(files[container]), 0o644); err != nil {
			return fmt.Errorf("configuration of %s: %w", adapter.ID(), err)
		}
		creds = append(creds, sandbox.Mount{Host: host, Container: container, ReadOnly: true})
	}
	spec.Credentials = creds
	return nil
}
