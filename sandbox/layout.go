package sandbox

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
)

// What a container path holds, as named in the errors of ContainerLayout.
const (
	KindWorktree   = "worktree"
	KindCredential = "credential mount"
	KindBind       = "bind mount"
	KindSession    = "session"
	KindHome       = "HOME"
	KindHomeParent = "folder of HOME" // a folder between HOME and a mount under it
	KindTmpfs      = "tmpfs"
)

// LayoutMount is a host path a container runner puts at a container path.
// Container is clean and ReadOnly is final (always true for credentials).
type LayoutMount struct {
	Mount
	Kind string // KindWorktree, KindCredential, KindBind or KindSession
}

// LayoutTmpfs is an in-memory folder owned by the container user. Path is
// clean and Mode is final (0o700 when the Spec said 0).
type LayoutTmpfs struct {
	Tmpfs
	Kind string // KindHome, KindHomeParent or KindTmpfs
}

// Layout is where every mount of a Spec goes in a container: the same rules
// for every container runner (the Docker and the Kubernetes one).
type Layout struct {
	// Mounts in order: the worktree, the credentials, the binds, the session.
	Mounts []LayoutMount
	// Tmpfs in order: HOME, the folders between HOME and the mounts under
	// it (each mount's deepest first), the Spec's.
	Tmpfs []LayoutTmpfs
}

// CheckContainerSpec validates what every container runner needs of a Spec
// before its mounts: an argv, a valid environment, an image and a user and
// group that are not root.
func CheckContainerSpec(spec *Spec) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	if spec.Image == "" {
		return errors.New("sandbox: no image")
	}
	if spec.UID <= 0 || spec.GID <= 0 {
		return fmt.Errorf("sandbox: the container user %d:%d must not be root", spec.UID, spec.GID)
	}
	return nil
}

// ContainerLayout lays out the mounts and the tmpfs folders of a Spec,
// refusing two at one path, a relative path, a mount that would hide HOME or
// overlap the worktree, and a session outside HOME or overlapping a
// credential. Every folder between HOME and a mount under it (the session,
// a credential mount, a configuration file its adapter writes; the mount's
// parent included) is a tmpfs of the user: a runtime would create those
// mountpoints as root and the CLI could not write beside what is mounted
// (Gemini writes ~/.gemini/projects.json beside its settings.json).
func ContainerLayout(spec *Spec) (*Layout, error) {
	l := &layout{seen: map[string]string{}}
	if err := l.bindAll(spec); err != nil {
		return nil, err
	}
	if err := l.claim(AgentHome, KindHome); err != nil {
		return nil, err
	}
	l.addTmpfs(AgentHome, 0o700, 0, KindHome)
	if s := spec.Session; s != nil {
		if err := l.session(*s, spec.Credentials); err != nil {
			return nil, err
		}
	}
	if err := l.homeParents(); err != nil {
		return nil, err
	}
	if err := l.extraTmpfs(spec.Tmpfs); err != nil {
		return nil, err
	}
	return &l.out, nil
}

// layout gathers the mounts of a container, refusing two at one path.
type layout struct {
	out  Layout
	seen map[string]string // container path -> what is mounted there
}

// claim reserves the container path p for what.
func (l *layout) claim(p, what string) error {
	if prior, ok := l.seen[p]; ok {
		return fmt.Errorf("sandbox: %s and %s are both mounted at %s", prior, what, p)
	}
	l.seen[p] = what
	return nil
}

func (l *layout) addTmpfs(p string, mode uint32, size int64, kind string) {
	l.out.Tmpfs = append(l.out.Tmpfs, LayoutTmpfs{Tmpfs: Tmpfs{Path: p, Mode: mode, Size: size}, Kind: kind})
}

// bind adds the bind mount m, named what in errors. Its container path must
// not hide HOME.
func (l *layout) bind(m Mount, what string, readOnly bool) error {
	if !filepath.IsAbs(m.Host) {
		return fmt.Errorf("sandbox: %s host path %q is not absolute", what, m.Host)
	}
	if !path.IsAbs(m.Container) {
		return fmt.Errorf("sandbox: %s container path %q is not absolute", what, m.Container)
	}
	target := path.Clean(m.Container)
	if target == "/" || target == AgentHome || isUnder(AgentHome, target) {
		return fmt.Errorf("sandbox: %s container path %q would hide %s", what, m.Container, AgentHome)
	}
	if err := l.claim(target, what); err != nil {
		return err
	}
	l.out.Mounts = append(l.out.Mounts, LayoutMount{Mount: Mount{Host: m.Host, Container: target, ReadOnly: readOnly}, Kind: what})
	return nil
}

// bindAll binds the worktree at WorkspacePath, the credential mounts
// read-only and the other binds as they say, none of them overlapping the
// worktree.
func (l *layout) bindAll(spec *Spec) error {
	if w := spec.Worktree; w != nil {
		if w.Container != "" && path.Clean(w.Container) != WorkspacePath {
			return fmt.Errorf("sandbox: the worktree is mounted at %s, not %q", WorkspacePath, w.Container)
		}
		wt := *w
		wt.Container = WorkspacePath
		if err := l.bind(wt, KindWorktree, w.ReadOnly); err != nil {
			return err
		}
	}
	for _, c := range spec.Credentials {
		if PathsOverlap(c.Container, WorkspacePath) {
			return fmt.Errorf("sandbox: credential mount %q overlaps %s", c.Container, WorkspacePath)
		}
		if err := l.bind(c, KindCredential, true); err != nil {
			return err
		}
	}
	for _, b := range spec.Binds {
		if PathsOverlap(b.Container, WorkspacePath) {
			return fmt.Errorf("sandbox: bind mount %q overlaps %s", b.Container, WorkspacePath)
		}
		if err := l.bind(b, KindBind, b.ReadOnly); err != nil {
			return err
		}
	}
	return nil
}

// session binds the session mount s read-write under HOME, clear of the
// credential mounts, and makes every folder between HOME and it a tmpfs of
// the container user.
func (l *layout) session(s Mount, credentials []Mount) error {
	target := path.Clean(s.Container)
	if !path.IsAbs(s.Container) || !isUnder(target, AgentHome) {
		return fmt.Errorf("sandbox: session path %q is not under %s", s.Container, AgentHome)
	}
	for _, c := range credentials {
		if PathsOverlap(c.Container, target) {
			return fmt.Errorf("sandbox: session path %s overlaps credential mount %s", target, c.Container)
		}
	}
	return l.bind(s, KindSession, false)
}

// homeParents makes every folder from HOME (excluded) down to the parent of
// each mount under HOME a tmpfs of the container user, once each.
func (l *layout) homeParents() error {
	for _, m := range slices.Clone(l.out.Mounts) {
		if !isUnder(m.Container, AgentHome) {
			continue
		}
		for dir := path.Dir(m.Container); dir != AgentHome; dir = path.Dir(dir) {
			if l.seen[dir] == KindHomeParent {
				continue
			}
			if err := l.claim(dir, KindHomeParent); err != nil {
				return err
			}
			l.addTmpfs(dir, 0o700, 0, KindHomeParent)
		}
	}
	return nil
}

// extraTmpfs adds the Spec's own tmpfs folders.
func (l *layout) extraTmpfs(list []Tmpfs) error {
	for _, t := range list {
		target := path.Clean(t.Path)
		if !path.IsAbs(t.Path) || target == "/" {
			return fmt.Errorf("sandbox: tmpfs path %q must be an absolute folder other than /", t.Path)
		}
		if err := l.claim(target, KindTmpfs); err != nil {
			return err
		}
		mode := t.Mode
		if mode == 0 {
			mode = 0o700
		}
		l.addTmpfs(target, mode, t.Size, KindTmpfs)
	}
	return nil
}
