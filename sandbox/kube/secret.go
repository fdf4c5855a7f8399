package kube

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// maxCredentialBytes bounds the credentials of one run: they travel in one
// Secret, which the API server caps at 1 MiB with its metadata.
const maxCredentialBytes = 900 << 10

// credential is one credential mount: a host file, or a folder whose files
// (nested folders kept) become keys of the run's Secret.
type credential struct {
	sandbox.Mount
	dir   bool
	files []credentialFile
}

type credentialFile struct {
	key  string // the Secret's key
	rel  string // the path under the mount ("" for a file mount)
	data []byte
}

// readCredential reads the host file or folder of credential mount n.
// Symlinks are followed to files (a folder mounted from a Secret on the bot's
// side is made of them); symlinks to folders, names starting with ".." (the
// kubelet's own entries) and anything but regular files are skipped.
func readCredential(m sandbox.Mount, n int) (credential, error) {
	c := credential{Mount: m}
	dir, err := isDir(m.Host)
	if err != nil {
		return c, fmt.Errorf("kube: credential mount %s: %w", m.Host, err)
	}
	c.dir = dir
	if !dir {
		data, err := os.ReadFile(m.Host)
		if err != nil {
			return c, fmt.Errorf("kube: credential mount: %w", err)
		}
		c.files = []credentialFile{{key: fmt.Sprintf("m%d", n), data: data}}
		return c, nil
	}
	err = filepath.WalkDir(m.Host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "..") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return c.addFile(p, d, n)
	})
	if err != nil {
		return c, fmt.Errorf("kube: credential mount %s: %w", m.Host, err)
	}
	return c, nil
}

func (c *credential) addFile(p string, d fs.DirEntry, n int) error {
	if d.IsDir() {
		return nil
	}
	fi, err := os.Stat(p) // follows a symlink
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	rel, err := filepath.Rel(c.Host, p)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	c.files = append(c.files, credentialFile{key: fmt.Sprintf("m%d-f%d", n, len(c.files)), rel: filepath.ToSlash(rel), data: data})
	return nil
}

func checkCredentialSize(creds []credential) error {
	total := 0
	for _, c := range creds {
		for _, f := range c.files {
			total += len(f.data)
		}
	}
	if total > maxCredentialBytes {
		return fmt.Errorf("kube: the credential mounts hold %d KiB, more than the %d KiB one Secret may carry", total>>10, maxCredentialBytes>>10)
	}
	return nil
}

// secret is the run's Secret holding every credential file, or nil.
func (r *Runner) secret(p *plan) *corev1.Secret {
	if len(p.creds) == 0 {
		return nil
	}
	data := map[string][]byte{}
	for _, c := range p.creds {
		for _, f := range c.files {
			data[f.key] = f.data
		}
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: r.ownLabels(p)},
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr.To(true),
		Data:       data,
	}
}

// credentialVolume is the Secret volume of credential mount n and where the
// agent mounts it: a folder at its path, a file through a subPath.
func credentialVolume(p *plan, n int) (corev1.Volume, corev1.VolumeMount) {
	c := p.creds[n]
	name := fmt.Sprintf("cred-%d", n)
	if len(c.files) == 0 { // an empty folder: a Secret volume without items would show every key
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			corev1.VolumeMount{Name: name, MountPath: c.Container, ReadOnly: true}
	}
	var items []corev1.KeyToPath
	for _, f := range c.files {
		rel := f.rel
		if !c.dir {
			rel = "file"
		}
		items = append(items, corev1.KeyToPath{Key: f.key, Path: rel})
	}
	vol := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: p.name, Items: items, DefaultMode: ptr.To[int32](0o444),
	}}}
	vm := corev1.VolumeMount{Name: name, MountPath: c.Container, ReadOnly: true}
	if !c.dir {
		vm.SubPath = "file"
	}
	return vol, vm
}
