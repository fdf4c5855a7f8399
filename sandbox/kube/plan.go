package kube

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// Paths of the runner's own files: stageDir in the helper containers holds
// every staged volume (one folder each), runDir in the agent holds stdin and
// stderr.
const (
	stageDir = "/alfred-stage"
	runDir   = "/alfred-run"
	subDir   = "d" // the folder of a staged volume the agent mounts (subPath)
)

// Volume names.
const (
	volRun       = "run"
	volHome      = "home"
	volWorkspace = "workspace"
	volSession   = "session"
)

// tmpfsVolume is one of the Spec's own tmpfs folders.
type tmpfsVolume struct {
	name string
	sandbox.Tmpfs
}

// plan is what one run makes, worked out from a valid Spec before any call.
type plan struct {
	spec     *sandbox.Spec
	name     string // the Pod's, also its Secret's and NetworkPolicy's
	argv     []string
	workdir  string
	stdin    []byte
	denyNet  bool
	timeout  time.Duration
	worktree *sandbox.LayoutMount
	session  *sandbox.LayoutMount
	creds    []credential
	tmpfs    []tmpfsVolume
	binds    []bindDir
	homeDirs []string // folders to make under HOME (relative, parents first), mode 0700
	endMark  string   // the wrapper's last line of stdout starts with it (endline.go)
}

// plan validates spec and works out the run.
func (r *Runner) plan(spec *sandbox.Spec) (*plan, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	l, err := sandbox.ContainerLayout(spec)
	if err != nil {
		return nil, err
	}
	p := &plan{spec: spec, name: "alfred-run-" + randomHex(6), timeout: r.opts.Timeout, endMark: "alfred-end-" + randomHex(8)}
	if spec.Timeout > 0 {
		p.timeout = spec.Timeout
	}
	p.argv = append(append([]string(nil), spec.Prefix...), spec.Argv...)
	if p.denyNet, err = networkOf(spec.Network); err != nil {
		return nil, err
	}
	if p.workdir, err = workdirOf(spec); err != nil {
		return nil, err
	}
	if err := p.addMounts(l); err != nil {
		return nil, err
	}
	if spec.Stdin != nil {
		if p.stdin, err = io.ReadAll(spec.Stdin); err != nil {
			return nil, fmt.Errorf("kube: read stdin: %w", err)
		}
	}
	return p, nil
}

// checkSpec refuses what the Docker runner refuses, plus what a Pod cannot do.
func checkSpec(spec *sandbox.Spec) error {
	if err := sandbox.CheckContainerSpec(spec); err != nil {
		return err
	}
	for k := range spec.Env {
		if strings.HasPrefix(k, "KUBERNETES_") {
			return fmt.Errorf("kube: environment variable %q is reserved: the kubelet sets KUBERNETES_* variables and the runner removes them", k)
		}
	}
	return nil
}

func networkOf(network string) (deny bool, err error) {
	switch network {
	case "", sandbox.NetworkNone: // a NetworkPolicy denies all ingress and egress
		return true, nil
	case sandbox.NetworkPod: // the cluster's Pod network, no policy
		return false, nil
	}
	return false, fmt.Errorf("kube: unknown network %q: the Kubernetes runner knows %q (no traffic, the default) and %q (the cluster's Pod network)", network, sandbox.NetworkNone, sandbox.NetworkPod)
}

func workdirOf(spec *sandbox.Spec) (string, error) {
	wd := spec.Workdir
	if wd == "" && spec.Worktree != nil {
		wd = sandbox.WorkspacePath
	}
	if wd != "" && !path.IsAbs(wd) {
		return "", fmt.Errorf("sandbox: workdir %q is not absolute", wd)
	}
	return wd, nil
}

// addMounts sorts the layout's mounts into the Pod's volumes and the
// folders to make under HOME.
func (p *plan) addMounts(l *sandbox.Layout) error {
	dirs := map[string]bool{}
	for _, m := range l.Mounts {
		switch m.Kind {
		case sandbox.KindWorktree, sandbox.KindSession:
			// Copied in and back: the host folder must exist (as a bind would).
			if dir, err := isDir(m.Host); err != nil || !dir {
				return fmt.Errorf("kube: %s host folder %s: not a folder (%v)", m.Kind, m.Host, err)
			}
			if m.Kind == sandbox.KindWorktree {
				p.worktree = &m
				continue
			}
			p.session = &m
			addHomeDirs(dirs, m.Container, true)
		case sandbox.KindBind:
			if err := p.addBind(m); err != nil {
				return err
			}
		case sandbox.KindCredential:
			c, err := readCredential(m.Mount, len(p.creds))
			if err != nil {
				return err
			}
			p.creds = append(p.creds, c)
			addHomeDirs(dirs, m.Container, c.dir)
		}
	}
	if err := checkCredentialSize(p.creds); err != nil {
		return err
	}
	for _, t := range l.Tmpfs {
		if t.Kind == sandbox.KindTmpfs {
			p.tmpfs = append(p.tmpfs, tmpfsVolume{name: fmt.Sprintf("tmpfs-%d", len(p.tmpfs)), Tmpfs: t.Tmpfs})
			addHomeDirs(dirs, t.Path, true)
		}
	}
	p.homeDirs = sortedDirs(dirs)
	return nil
}

// addHomeDirs notes the folders between HOME and a mount at target (and
// target itself when it is a folder): made in advance by the user, mode
// 0700, else the runtime would make them as root and the CLI could not
// write beside its mount.
func addHomeDirs(dirs map[string]bool, target string, isDir bool) {
	rel, ok := strings.CutPrefix(target, sandbox.AgentHome+"/")
	if !ok {
		return
	}
	if !isDir {
		rel = path.Dir(rel)
	}
	for ; rel != "." && rel != "/" && rel != ""; rel = path.Dir(rel) {
		dirs[rel] = true
	}
}

// sortedDirs lists dirs by depth, so every parent comes before its children.
func sortedDirs(dirs map[string]bool) []string {
	list := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(list, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	return list
}

// isDir reports whether the host path is a folder (following symlinks).
func isDir(p string) (bool, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}
