package sandbox

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// AgentHome is HOME inside the container; credential mounts must sit under it.
const AgentHome = "/home/agent"

// CredentialMounts are the read-only credential mounts of each adapter, keyed
// by adapter id, as AGENT_CREDENTIAL_MOUNTS sets them.
type CredentialMounts map[string][]Mount

// ParseCredentialMounts parses AGENT_CREDENTIAL_MOUNTS: comma-separated
// entries `adapter=/host/path:/container/path`, for example
// `claude-code=/srv/claude:/home/agent/.claude`. Host paths must be absolute and
// exist; container paths must be absolute and sit under /home/agent. An empty
// value gives no mounts. Every mount is read-only.
func ParseCredentialMounts(value string) (CredentialMounts, error) {
	mounts := CredentialMounts{}
	if strings.TrimSpace(value) == "" {
		return mounts, nil
	}
	for i, entry := range strings.Split(value, ",") {
		m, adapter, err := parseCredentialEntry(strings.TrimSpace(entry))
		if err != nil {
			return nil, fmt.Errorf("AGENT_CREDENTIAL_MOUNTS entry %d %q: %w", i+1, entry, err)
		}
		for _, prior := range mounts[adapter] {
			if PathsOverlap(prior.Container, m.Container) {
				return nil, fmt.Errorf("AGENT_CREDENTIAL_MOUNTS entry %d %q: container path overlaps %s of the same adapter", i+1, entry, prior.Container)
			}
		}
		mounts[adapter] = append(mounts[adapter], m)
	}
	return mounts, nil
}

func parseCredentialEntry(entry string) (Mount, string, error) {
	if entry == "" {
		return Mount{}, "", fmt.Errorf("empty entry (stray comma?)")
	}
	adapter, paths, ok := strings.Cut(entry, "=")
	adapter = strings.TrimSpace(adapter)
	if !ok || adapter == "" {
		return Mount{}, "", fmt.Errorf("want adapter=/host/path:/container/path")
	}
	if strings.ContainsAny(adapter, " /:\t") {
		return Mount{}, "", fmt.Errorf("adapter id %q has a space, slash or colon", adapter)
	}
	host, ctr, ok := strings.Cut(paths, ":")
	if !ok || strings.Contains(ctr, ":") {
		return Mount{}, "", fmt.Errorf("want exactly one colon between /host/path and /container/path")
	}
	if !filepath.IsAbs(host) {
		return Mount{}, "", fmt.Errorf("host path %q is not absolute", host)
	}
	if _, err := os.Stat(host); err != nil {
		return Mount{}, "", fmt.Errorf("host path %q: %w", host, err)
	}
	if !path.IsAbs(ctr) {
		return Mount{}, "", fmt.Errorf("container path %q is not absolute", ctr)
	}
	ctr = path.Clean(ctr)
	if !strings.HasPrefix(ctr, AgentHome+"/") {
		return Mount{}, "", fmt.Errorf("container path %q is not under %s", ctr, AgentHome)
	}
	return Mount{Host: filepath.Clean(host), Container: ctr, ReadOnly: true}, adapter, nil
}

// Overlap returns the credential mount of adapter whose container path equals,
// contains or sits under path, if any. The session resolver turns resume off
// when a session state path overlaps a credential mount.
func (c CredentialMounts) Overlap(adapter, path string) (Mount, bool) {
	for _, m := range c[adapter] {
		if PathsOverlap(m.Container, path) {
			return m, true
		}
	}
	return Mount{}, false
}

// PathsOverlap reports whether two absolute slash paths are equal or one
// contains the other, segment by segment: /home/agent/.claude overlaps
// /home/agent/.claude/projects but not /home/agent/.claude-x.
func PathsOverlap(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	return a == b || isUnder(a, b) || isUnder(b, a)
}

// isUnder reports whether the clean path p sits strictly under the clean path dir.
func isUnder(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}
