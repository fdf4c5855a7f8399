package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/alchemic-studio/alfred/config"
)

// Variables scripts/k8s.sh sets (scripts/test.sh starts the cluster before go
// test). suite_test.go's setBy does not name them: needKube does.
const (
	envKubeconfig   = "ALFRED_TEST_KUBECONFIG"    // scripts/k8s.sh start
	envK8sNamespace = "ALFRED_TEST_K8S_NAMESPACE" // scripts/k8s.sh start: Pod Security "restricted" enforced
)

var kubeSetBy = map[string]string{
	envKubeconfig:   "scripts/k8s.sh start",
	envK8sNamespace: "scripts/k8s.sh start",
}

// needKube is need for the cluster's variables: unset, the test fails naming
// the script that sets it; under -short it is skipped instead.
func needKube(t *testing.T, name string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	script := kubeSetBy[name]
	if script == "" {
		script = setBy[name]
	}
	if testing.Short() {
		t.Skipf("-short: %s is unset; this test needs the test cluster (%s sets it)", name, script)
	}
	t.Fatalf("%s is unset: run %s first, as scripts/test.sh does", name, script)
	return ""
}

// kubeDir holds the manifests, seen from this package's folder.
const kubeDir = "kubernetes"

// Settings of the Kubernetes runner (sandbox/kube), which config.Settings
// may not list yet.
var kubeRunnerSettings = []string{"ALFRED_KUBECONFIG", "ALFRED_K8S_NAMESPACE", "ALFRED_K8S_CPU_REQUEST", "ALFRED_K8S_MEMORY_REQUEST"}

// manifest is one object of the kustomization, with its file.
type manifest struct {
	file string
	obj  *unstructured.Unstructured
}

// kustomization is the part of kustomization.yaml the tests read.
type kustomization struct {
	Namespace string   `json:"namespace"`
	Resources []string `json:"resources"`
}

func readKustomization(t *testing.T) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if len(k.Resources) == 0 {
		t.Fatal("kustomization.yaml lists no resources")
	}
	return k
}

// parseFile decodes every object of a YAML file into unstructured objects.
func parseFile(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("%s: an object without apiVersion, kind or name: %v", file, m)
		}
		out = append(out, u)
	}
	return out
}

// loadManifests parses every file of the kustomization, in its order.
func loadManifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	for _, r := range readKustomization(t).Resources {
		for _, obj := range parseFile(t, filepath.Join(kubeDir, r)) {
			out = append(out, manifest{file: r, obj: obj})
		}
	}
	return out
}

// typed converts the only object of kind in ms into T.
func typed[T any](t *testing.T, ms []manifest, kind string) *T {
	t.Helper()
	var found []manifest
	for _, m := range ms {
		if m.obj.GetKind() == kind {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s in the kustomization; want 1", len(found), kind)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].obj.Object, out, true); err != nil {
		t.Fatalf("%s: %s does not convert to its type: %v", found[0].file, kind, err)
	}
	return out
}

// runnerRules are what ALFRED_RUNNER=kubernetes needs, by API group and
// resource: the verbs, exactly.
var runnerRules = map[[2]string][]string{
	{"", "pods"}:                             {"create", "delete", "get", "list", "watch"},
	{"", "pods/log"}:                         {"get"},
	{"", "pods/exec"}:                        {"create", "get"},
	{"", "secrets"}:                          {"create", "delete", "get", "list"},
	{"networking.k8s.io", "networkpolicies"}: {"create", "delete", "get", "list", "update"},
	{"", "persistentvolumeclaims"}:           {"create", "delete", "get", "list"},
}

// TestKubeManifests checks deploy/kubernetes as files: what each object
// says. TestKubeCluster hands them to an API server.
func TestKubeManifests(t *testing.T) {
	k := readKustomization(t)
	ms := loadManifests(t)

	t.Run("the kustomization lists every manifest but the example Secret", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := filepath.Base(f)
			listed := slices.Contains(k.Resources, name)
			switch {
			case name == "kustomization.yaml":
			case name == "secret.example.yaml" && listed:
				t.Errorf("kustomization.yaml lists secret.example.yaml: its placeholders would overwrite the operator's Secret")
			case name != "secret.example.yaml" && !listed:
				t.Errorf("kustomization.yaml does not list %s", name)
			}
		}
		if k.Namespace != "alfred" {
			t.Errorf("kustomization.yaml namespace = %q; want alfred", k.Namespace)
		}
	})

	t.Run("one object per file, in the namespace alfred, nothing cluster-wide but it", func(t *testing.T) {
		want := []string{"ConfigMap", "Deployment", "Namespace", "PersistentVolumeClaim", "Role", "RoleBinding", "Service", "ServiceAccount"}
		var kinds []string
		perFile := map[string]int{}
		for _, m := range ms {
			kinds = append(kinds, m.obj.GetKind())
			perFile[m.file]++
			switch ns := m.obj.GetNamespace(); {
			case m.obj.GetKind() == "Namespace":
				if ns != "" || m.obj.GetName() != k.Namespace {
					t.Errorf("%s: the Namespace is %q (in %q); want %q", m.file, m.obj.GetName(), ns, k.Namespace)
				}
			case ns != k.Namespace:
				t.Errorf("%s: %s %s is in namespace %q; want %q", m.file, m.obj.GetKind(), m.obj.GetName(), ns, k.Namespace)
			}
		}
		slices.Sort(kinds)
		if !slices.Equal(kinds, want) {
			t.Errorf("kinds %v; want %v (a ClusterRole or ClusterRoleBinding would grant beyond the namespace)", kinds, want)
		}
		for f, n := range perFile {
			if n != 1 {
				t.Errorf("%s holds %d objects; want one concern per file", f, n)
			}
		}
	})

	t.Run("the namespace enforces Pod Security restricted", func(t *testing.T) {
		ns := typed[corev1.Namespace](t, ms, "Namespace")
		for _, mode := range []string{"enforce", "warn", "audit"} {
			if got := ns.Labels["pod-security.kubernetes.io/"+mode]; got != "restricted" {
				t.Errorf("label pod-security.kubernetes.io/%s = %q; want restricted", mode, got)
			}
		}
	})

	t.Run("the Role grants what the runner needs and nothing more", func(t *testing.T) {
		role := typed[rbacv1.Role](t, ms, "Role")
		got := map[[2]string][]string{}
		for _, r := range role.Rules {
			if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
				t.Errorf("rule %+v: non-resource URLs or resource names; want neither", r)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					got[[2]string{g, res}] = append(got[[2]string{g, res}], r.Verbs...)
				}
			}
		}
		for key, verbs := range got {
			if slices.Contains(verbs, "*") || key[0] == "*" || key[1] == "*" {
				t.Errorf("%q in group %q: a wildcard (%v)", key[1], key[0], verbs)
			}
			if _, ok := runnerRules[key]; !ok {
				t.Errorf("%q in group %q: verbs %v on a resource the runner does not use", key[1], key[0], verbs)
			}
		}
		for key, want := range runnerRules {
			t.Run(key[1], func(t *testing.T) {
				verbs := slices.Clone(got[key])
				slices.Sort(verbs)
				verbs = slices.Compact(verbs)
				if !slices.Equal(verbs, want) {
					t.Errorf("verbs on %q (group %q) = %v; want %v", key[1], key[0], verbs, want)
				}
			})
		}
	})

	t.Run("the RoleBinding gives the Role to the bot's ServiceAccount", func(t *testing.T) {
		rb := typed[rbacv1.RoleBinding](t, ms, "RoleBinding")
		sa := typed[corev1.ServiceAccount](t, ms, "ServiceAccount")
		role := typed[rbacv1.Role](t, ms, "Role")
		if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}) {
			t.Errorf("roleRef %+v; want the Role %s", rb.RoleRef, role.Name)
		}
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}
		if !slices.Equal(rb.Subjects, want) {
			t.Errorf("subjects %+v; want %+v", rb.Subjects, want)
		}
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s: automountServiceAccountToken %v; want false (only the bot's Pod asks for a token)", sa.Name, sa.AutomountServiceAccountToken)
		}
	})

	t.Run("the Deployment", func(t *testing.T) {
		d := typed[appsv1.Deployment](t, ms, "Deployment")
		sa := typed[corev1.ServiceAccount](t, ms, "ServiceAccount")
		cm := typed[corev1.ConfigMap](t, ms, "ConfigMap")
		pvc := typed[corev1.PersistentVolumeClaim](t, ms, "PersistentVolumeClaim")
		checkDeployment(t, d, sa, cm, pvc)
	})

	t.Run("the Service sends port 80 to the bot's 8080", func(t *testing.T) {
		svc := typed[corev1.Service](t, ms, "Service")
		d := typed[appsv1.Deployment](t, ms, "Deployment")
		if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("type %s; want ClusterIP (an Ingress of the operator's exposes it)", svc.Spec.Type)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
			t.Fatalf("ports %+v; want one, 80", svc.Spec.Ports)
		}
		c := botContainer(t, &d.Spec.Template.Spec)
		if port := containerPort(t, c, svc.Spec.Ports[0].TargetPort); port != 8080 {
			t.Errorf("targetPort %s is the container's %d; want 8080", svc.Spec.Ports[0].TargetPort.String(), port)
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		if len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("selector %v does not select the bot's Pod (labels %v)", svc.Spec.Selector, d.Spec.Template.Labels)
		}
	})

	t.Run("the PersistentVolumeClaim", func(t *testing.T) {
		pvc := typed[corev1.PersistentVolumeClaim](t, ms, "PersistentVolumeClaim")
		if pvc.Name != "alfred-data" || !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
			t.Errorf("PVC %s, access modes %v; want alfred-data, ReadWriteOnce", pvc.Name, pvc.Spec.AccessModes)
		}
		if pvc.Spec.Resources.Requests.Storage().IsZero() {
			t.Error("the PVC requests no storage")
		}
	})

	t.Run("settings: the ConfigMap's are known and not secret, the Secret's are secret", func(t *testing.T) {
		cm := typed[corev1.ConfigMap](t, ms, "ConfigMap")
		settings := map[string]config.Setting{}
		for _, s := range config.Settings {
			settings[s.Env] = s
		}
		for name := range cm.Data {
			s, known := settings[name]
			switch {
			case slices.Contains(kubeRunnerSettings, name):
			case !known:
				t.Errorf("the ConfigMap sets %s, which is no setting of config.Settings", name)
			case s.Secret:
				t.Errorf("the ConfigMap sets %s, a secret setting: it belongs in alfred-secrets", name)
			}
		}
		for name, want := range map[string]string{"ALFRED_LISTEN": "0.0.0.0:8080", "ALFRED_RUNNER": "kubernetes",
			"ALFRED_STATE_DIR": "/var/lib/alfred/state.git", "ALFRED_DATA_DIR": "/var/lib/alfred/data"} {
			if got := cm.Data[name]; got != want {
				t.Errorf("ConfigMap %s = %q; want %q", name, got, want)
			}
		}
		secrets := parseFile(t, filepath.Join(kubeDir, "secret.example.yaml"))
		if len(secrets) != 1 || secrets[0].GetKind() != "Secret" || secrets[0].GetName() != "alfred-secrets" || secrets[0].GetNamespace() != k.Namespace {
			t.Fatalf("secret.example.yaml: want one Secret alfred-secrets in %s", k.Namespace)
		}
		var secret corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(secrets[0].Object, &secret); err != nil {
			t.Fatal(err)
		}
		offered := strings.Split(cm.Data["ALFRED_AGENT_ENV"], ",")
		for name, v := range secret.StringData {
			if s, known := settings[name]; !(known && s.Secret) && !slices.Contains(offered, name) {
				t.Errorf("secret.example.yaml sets %s: neither a secret setting nor a variable ALFRED_AGENT_ENV offers", name)
			}
			if !strings.Contains(v, "REPLACE") {
				t.Errorf("secret.example.yaml: %s = %q; want a REPLACE placeholder", name, v)
			}
		}
		for _, name := range []string{"ALFRED_FORGE_TOKEN", "ALFRED_WEBHOOK_SECRETS"} {
			if _, ok := secret.StringData[name]; !ok {
				t.Errorf("secret.example.yaml has no %s", name)
			}
		}
	})
}

// checkDeployment checks the bot's Deployment: one replica at a time, its
// account and token, a restricted security context, its settings, volume and
// probes.
func checkDeployment(t *testing.T, d *appsv1.Deployment, sa *corev1.ServiceAccount, cm *corev1.ConfigMap, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas %v; want 1 (the state repository is opened by one process)", d.Spec.Replicas)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q; want Recreate (never two bots at once)", d.Spec.Strategy.Type)
	}
	ps := &d.Spec.Template.Spec
	if ps.ServiceAccountName != sa.Name {
		t.Errorf("serviceAccountName %q; want %q", ps.ServiceAccountName, sa.Name)
	}
	if ps.AutomountServiceAccountToken == nil || !*ps.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken %v; want true (the bot needs the API server)", ps.AutomountServiceAccountToken)
	}
	c := botContainer(t, ps)

	t.Run("security context", func(t *testing.T) {
		var uid, gid int64
		for _, s := range config.Settings {
			if s.Env == "ALFRED_AGENT_USER" {
				u, g, _ := strings.Cut(s.Default, ":")
				uid, _ = strconv.ParseInt(u, 10, 64)
				gid, _ = strconv.ParseInt(g, 10, 64)
			}
		}
		psc := ps.SecurityContext
		if psc == nil {
			t.Fatal("no Pod securityContext")
		}
		// The image's USER is ALFRED_AGENT_USER's default (botimage_test.go).
		if !eq(psc.RunAsNonRoot, true) || !eq(psc.RunAsUser, uid) || !eq(psc.RunAsGroup, gid) || !eq(psc.FSGroup, gid) {
			t.Errorf("Pod securityContext runAsNonRoot %v, runAsUser %v, runAsGroup %v, fsGroup %v; want true, %d, %d, %d (the image's user)",
				deref(psc.RunAsNonRoot), deref(psc.RunAsUser), deref(psc.RunAsGroup), deref(psc.FSGroup), uid, gid, gid)
		}
		if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("Pod seccompProfile %+v; want RuntimeDefault", psc.SeccompProfile)
		}
		sc := c.SecurityContext
		if sc == nil {
			t.Fatal("no container securityContext")
		}
		if !eq(sc.AllowPrivilegeEscalation, false) || !eq(sc.ReadOnlyRootFilesystem, true) || !eq(sc.RunAsNonRoot, true) {
			t.Errorf("container allowPrivilegeEscalation %v, readOnlyRootFilesystem %v, runAsNonRoot %v; want false, true, true",
				deref(sc.AllowPrivilegeEscalation), deref(sc.ReadOnlyRootFilesystem), deref(sc.RunAsNonRoot))
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("capabilities %+v; want drop ALL, add none", sc.Capabilities)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Error("privileged")
		}
	})

	t.Run("volumes: the data volume at /var/lib/alfred, /tmp in memory or on the node", func(t *testing.T) {
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m.Name
		}
		vols := map[string]corev1.Volume{}
		for _, v := range ps.Volumes {
			vols[v.Name] = v
		}
		data := vols[mounts["/var/lib/alfred"]]
		if data.PersistentVolumeClaim == nil || data.PersistentVolumeClaim.ClaimName != pvc.Name {
			t.Errorf("/var/lib/alfred is volume %+v; want the PVC %s", data, pvc.Name)
		}
		for _, name := range []string{"ALFRED_STATE_DIR", "ALFRED_DATA_DIR"} {
			if dir := cm.Data[name]; !strings.HasPrefix(dir, "/var/lib/alfred/") {
				t.Errorf("%s = %q is not on the data volume (/var/lib/alfred)", name, dir)
			}
		}
		if tmp := vols[mounts["/tmp"]]; tmp.EmptyDir == nil {
			t.Errorf("/tmp is volume %+v; want an emptyDir (the root file system is read-only; git runs with HOME=/tmp)", tmp)
		}
	})

	t.Run("settings from alfred-config and alfred-secrets", func(t *testing.T) {
		var got []string
		for _, e := range c.EnvFrom {
			switch {
			case e.ConfigMapRef != nil:
				got = append(got, "configmap/"+e.ConfigMapRef.Name)
			case e.SecretRef != nil:
				got = append(got, "secret/"+e.SecretRef.Name)
			}
		}
		if want := []string{"configmap/" + cm.Name, "secret/alfred-secrets"}; !slices.Equal(got, want) {
			t.Errorf("envFrom %v; want %v", got, want)
		}
	})

	t.Run("resources", func(t *testing.T) {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if c.Resources.Requests.Name(r, "").IsZero() || c.Resources.Limits.Name(r, "").IsZero() {
				t.Errorf("%s: request %v, limit %v; want both", r, c.Resources.Requests[r], c.Resources.Limits[r])
			}
		}
	})

	t.Run("probes on /healthz and /readyz at the container port", func(t *testing.T) {
		_, listenPort, _ := strings.Cut(cm.Data["ALFRED_LISTEN"], ":")
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"startupProbe", c.StartupProbe, "/healthz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s: %+v; want an httpGet of %s", p.name, p.probe, p.path)
				continue
			}
			port := containerPort(t, c, p.probe.HTTPGet.Port)
			if p.probe.HTTPGet.Path != p.path || strconv.Itoa(int(port)) != listenPort {
				t.Errorf("%s: GET %s on port %d; want %s on ALFRED_LISTEN's %s", p.name, p.probe.HTTPGet.Path, port, p.path, listenPort)
			}
		}
		if c.StartupProbe != nil {
			if budget := c.StartupProbe.PeriodSeconds * c.StartupProbe.FailureThreshold; budget < 90 {
				t.Errorf("the startup probe gives the bot %d s; want 90 or more (it asks the forge who it is before it listens, retried for ALFRED_FORGE_CALL_BUDGET, 1m)", budget)
			}
		}
	})

	if grace := ps.TerminationGracePeriodSeconds; grace == nil || *grace <= 30 {
		t.Errorf("terminationGracePeriodSeconds %v; want more than ALFRED_SHUTDOWN_TIMEOUT's 30s", deref(grace))
	}
}

func eq[T comparable](p *T, v T) bool { return p != nil && *p == v }

func deref[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func botContainer(t *testing.T, ps *corev1.PodSpec) *corev1.Container {
	t.Helper()
	if len(ps.Containers) != 1 || len(ps.InitContainers) != 0 {
		t.Fatalf("%d containers and %d init containers; want the bot alone", len(ps.Containers), len(ps.InitContainers))
	}
	return &ps.Containers[0]
}

// containerPort resolves a port by number or name on container c.
func containerPort(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, p.StrVal)
	return 0
}

// warningLog collects the API server's warnings (Pod Security's warn mode
// among them).
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

// take returns the warnings since the last take.
func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// cluster is the test cluster through client-go.
type cluster struct {
	config   *rest.Config
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	mapper   meta.RESTMapper
	warnings *warningLog
}

func newCluster(t *testing.T, kubeconfig string) *cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	w := &warningLog{}
	cfg.WarningHandler = w
	cfg.Timeout = 30 * time.Second
	cfg.QPS, cfg.Burst = 50, 100 // the access reviews come in dozens
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	return &cluster{config: cfg, client: client, dynamic: dyn, mapper: mapper, warnings: w}
}

// resource is the dynamic client of obj's kind, in its namespace when it has one.
func (c *cluster) resource(t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: no resource on the API server: %v", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	return c.dynamic.Resource(m.Resource)
}

// create creates obj, for real or with a server-side dry run.
func (c *cluster) create(t *testing.T, ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	t.Helper()
	opts := metav1.CreateOptions{FieldManager: "alfred-deploy-test", FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := c.resource(t, obj).Create(ctx, obj, opts)
	return err
}

// intoNamespace is a copy of obj moved into namespace ns, as kustomize's
// namespace: does (the RoleBinding's ServiceAccount subjects follow).
func intoNamespace(t *testing.T, obj *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	t.Helper()
	o := obj.DeepCopy()
	if o.GetKind() == "Namespace" {
		o.SetName(ns)
		return o
	}
	o.SetNamespace(ns)
	if o.GetKind() == "RoleBinding" {
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
				m["namespace"] = ns
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, subjects, "subjects"); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func toUnstructured(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestKubeCluster hands the manifests to the test cluster's API server: every
// one dry-run, the bot's Pod against Pod Security "restricted", the Role's
// grants through SubjectAccessReviews, and the bot really deployed.
func TestKubeCluster(t *testing.T) {
	kubeconfig := needKube(t, envKubeconfig)
	base := needKube(t, envK8sNamespace)
	c := newCluster(t, kubeconfig)
	ms := loadManifests(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The cluster's own test namespace enforces "restricted", as its
	// script says: what follows relies on the admission plugin doing so.
	if ns, err := c.client.CoreV1().Namespaces().Get(ctx, base, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s of %s: %v", base, envK8sNamespace, err)
	} else if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("namespace %s enforces Pod Security %q; want restricted", base, got)
	}

	// A namespace of this test, made from namespace.yaml (its Pod Security
	// labels included) under another name, deleted at the end.
	ns := fmt.Sprintf("%s-deploy-%d", base, os.Getpid())
	if len(ns) > 63 {
		ns = ns[len(ns)-63:]
	}
	var nsObj *unstructured.Unstructured
	for _, m := range ms {
		if m.obj.GetKind() == "Namespace" {
			nsObj = intoNamespace(t, m.obj, ns)
		}
	}
	t.Run("the Namespace, dry-run", func(t *testing.T) {
		c.warnings.take()
		if err := c.create(t, ctx, nsObj, true); err != nil {
			t.Fatalf("dry-run create of Namespace %s (namespace.yaml): %v", ns, err)
		}
		if w := c.warnings.take(); len(w) > 0 {
			t.Errorf("warnings: %q", w)
		}
	})
	if err := c.create(t, ctx, nsObj, false); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		// Not waited for: the Pods end within their grace period.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})

	t.Run("every manifest, dry-run", func(t *testing.T) {
		for _, m := range ms {
			if m.obj.GetKind() == "Namespace" {
				continue
			}
			t.Run(m.file, func(t *testing.T) {
				c.warnings.take()
				if err := c.create(t, ctx, intoNamespace(t, m.obj, ns), true); err != nil {
					t.Errorf("dry-run create of %s %s: %v", m.obj.GetKind(), m.obj.GetName(), err)
				}
				if w := c.warnings.take(); len(w) > 0 {
					t.Errorf("%s: warnings: %q", m.file, w)
				}
			})
		}
	})

	// The ServiceAccount, Role and RoleBinding for real: the Pod's admission
	// wants its account, the reviews below the grants.
	for _, m := range ms {
		switch m.obj.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding":
			if err := c.create(t, ctx, intoNamespace(t, m.obj, ns), false); err != nil {
				t.Fatalf("create %s (%s): %v", m.obj.GetKind(), m.file, err)
			}
		}
	}
	deployment := typed[appsv1.Deployment](t, ms, "Deployment")

	t.Run("the bot's Pod passes Pod Security restricted", func(t *testing.T) {
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "alfred-pss-check", Namespace: ns, Labels: deployment.Spec.Template.Labels},
			Spec:       *deployment.Spec.Template.Spec.DeepCopy(),
		}
		c.warnings.take()
		if err := c.create(t, ctx, toUnstructured(t, pod), true); err != nil {
			t.Fatalf("dry-run create of a Pod from the Deployment's template in %s (restricted): %v", ns, err)
		}
		if w := c.warnings.take(); len(w) > 0 {
			t.Errorf("warnings: %q", w)
		}

		// The control: the same Pod made to escalate is refused, so the
		// pass above is Pod Security's, not an admission that checks nothing.
		bad := pod.DeepCopy()
		bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		err := c.create(t, ctx, toUnstructured(t, bad), true)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
			t.Errorf("a Pod of the template with allowPrivilegeEscalation: true: %v; want Pod Security's refusal", err)
		}
		c.warnings.take()
	})

	t.Run("the ServiceAccount may do what the runner needs, here only", func(t *testing.T) {
		user := "system:serviceaccount:" + ns + ":alfred"
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
		review := func(ctx context.Context, a authorizationv1.ResourceAttributes) (bool, error) {
			r, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a},
			}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return r.Status.Allowed, nil
		}
		split := func(res string) (string, string) { r, sub, _ := strings.Cut(res, "/"); return r, sub }
		// The authorizer sees a new Role through its informer: wait for it.
		first := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := review(ctx, first)
			if err != nil {
				t.Fatalf("SubjectAccessReview: %v", err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s may not create pods in %s 15 s after the RoleBinding", user, ns)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for key, verbs := range runnerRules {
			for _, verb := range verbs {
				res, sub := split(key[1])
				a := authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: key[0], Resource: res, Subresource: sub}
				if ok, err := review(ctx, a); err != nil || !ok {
					t.Errorf("%s %s in %s: allowed %v (%v); want allowed", verb, key[1], ns, ok, err)
				}
				// The same in the cluster's other namespaces: refused.
				a.Namespace = "default"
				if ok, err := review(ctx, a); err != nil || ok {
					t.Errorf("%s %s in default: allowed %v (%v); want refused", verb, key[1], ok, err)
				}
			}
		}
		for _, a := range []authorizationv1.ResourceAttributes{
			{Verb: "get", Resource: "namespaces", Name: ns},
			{Verb: "list", Resource: "nodes"},
			{Verb: "list", Resource: "pods"}, // every namespace
			{Namespace: ns, Verb: "update", Resource: "pods"},
			{Namespace: ns, Verb: "patch", Resource: "pods"},
			{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "portforward"},
			{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "attach"},
			{Namespace: ns, Verb: "update", Resource: "secrets"},
			{Namespace: ns, Verb: "get", Resource: "configmaps"},
			{Namespace: ns, Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
			{Namespace: ns, Verb: "create", Group: "apps", Resource: "deployments"},
			{Namespace: ns, Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
			{Namespace: ns, Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles"},
			{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		} {
			if ok, err := review(ctx, a); err != nil || ok {
				t.Errorf("%s %s/%s in %q: allowed %v (%v); want refused", a.Verb, a.Resource, a.Subresource, a.Namespace, ok, err)
			}
		}
	})

	t.Run("the bot runs", func(t *testing.T) {
		deployBot(t, ctx, c, ms, ns)
	})
}

// deployBot applies the manifests for real in ns with the suite's bot image,
// waits for the PVC to be Bound by the cluster's default StorageClass (the
// controller manager's host-path provisioner in scripts/k8s.sh) and for the
// Pod to be Ready by the manifest's own httpGet probes, and reads /healthz
// and /readyz through the Service (its ClusterIP, which kube-proxy routes)
// and through a port-forward. No forge is reachable here (the e2e test
// TestE2EKubernetesInCluster gives the bot one) and `alfred serve` asks its
// forge who the bot is before it listens: ALFRED_FORGE is emptied, so the
// bot serves without a forge (its state store only).
func deployBot(t *testing.T, ctx context.Context, c *cluster, ms []manifest, ns string) {
	image := need(t, envBotImage)
	need(t, envDockerHost)

	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(repoRoot, "scripts", "k8s.sh"), "import", image)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("scripts/k8s.sh import %s: %v\n%s", image, err, stderr.String())
	}
	t.Logf("scripts/k8s.sh import %s: %s", image, time.Since(t0).Round(time.Millisecond))

	defaultClass := ""
	classes, err := c.client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range classes.Items {
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			defaultClass = sc.Name
		}
	}
	if defaultClass == "" {
		t.Fatal("the cluster has no default StorageClass: the shipped PVC (no storageClassName) would never be bound; scripts/k8s.sh makes one")
	}

	// The Secret the operator makes, with dummy values.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "alfred-secrets", Namespace: ns},
		StringData: map[string]string{"ALFRED_FORGE_TOKEN": "dummy-token", "ALFRED_WEBHOOK_SECRETS": "dummy-webhook-secret", "ANTHROPIC_API_KEY": "dummy-key"},
	}
	if _, err := c.client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the Secret alfred-secrets: %v", err)
	}
	for _, m := range ms {
		obj := intoNamespace(t, m.obj, ns)
		switch m.obj.GetKind() {
		case "Namespace", "ServiceAccount", "Role", "RoleBinding": // made already
			continue
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &cm); err != nil {
				t.Fatal(err)
			}
			cm.Data["ALFRED_FORGE"], cm.Data["ALFRED_FORGE_URL"] = "", ""
			if !imageAcceptsRunner(t, image, cm.Data["ALFRED_RUNNER"]) {
				t.Logf("%s does not accept ALFRED_RUNNER=%s (an image older than the runner): the bot runs with host (without a forge it starts no runner)", image, cm.Data["ALFRED_RUNNER"])
				cm.Data["ALFRED_RUNNER"] = "host"
			}
			obj = toUnstructured(t, &cm)
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
				t.Fatal(err)
			}
			ps := &d.Spec.Template.Spec
			ps.Containers[0].Image = image
			ps.Containers[0].ImagePullPolicy = corev1.PullNever
			// The same httpGet probes, at a pace a test can wait for.
			for _, p := range []*corev1.Probe{ps.Containers[0].StartupProbe, ps.Containers[0].ReadinessProbe} {
				if p.HTTPGet == nil {
					t.Fatalf("the Deployment's probe %+v is no httpGet", p)
				}
				p.PeriodSeconds = 1
			}
			obj = toUnstructured(t, &d)
		}
		c.warnings.take()
		if err := c.create(t, ctx, obj, false); err != nil {
			t.Fatalf("create %s %s (%s): %v", obj.GetKind(), obj.GetName(), m.file, err)
		}
		if w := c.warnings.take(); len(w) > 0 {
			t.Errorf("%s: warnings: %q", m.file, w)
		}
	}

	deployment := typed[appsv1.Deployment](t, ms, "Deployment")
	selector := labels.SelectorFromSet(deployment.Spec.Selector.MatchLabels).String()
	t1 := time.Now()
	pvc := typed[corev1.PersistentVolumeClaim](t, ms, "PersistentVolumeClaim")
	waitBound(t, ctx, c.client, ns, pvc.Name, defaultClass)
	t.Logf("PVC %s Bound %s after its creation", pvc.Name, time.Since(t1).Round(time.Millisecond))
	pod := waitReady(t, ctx, c, ns, selector, 90*time.Second)
	t.Logf("Pod %s Ready %s after the Deployment", pod.Name, time.Since(t1).Round(time.Millisecond))
	mounted := false
	for _, v := range pod.Spec.Volumes {
		mounted = mounted || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name
	}
	if !mounted {
		t.Errorf("the bot's Pod mounts no PVC %s: volumes %+v", pvc.Name, pod.Spec.Volumes)
	}

	if pod.Spec.SecurityContext == nil || !eq(pod.Spec.SecurityContext.RunAsUser, 1000) {
		t.Errorf("the Pod's securityContext %+v; want the manifest's", pod.Spec.SecurityContext)
	}
	token := false
	for _, v := range pod.Spec.Volumes {
		token = token || v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-")
	}
	if !token {
		t.Error("the bot's Pod has no service account token (kube-api-access-*): it cannot reach the API server")
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.RestartCount > 0 {
			t.Errorf("container %s restarted %d times", s.Name, s.RestartCount)
		}
	}

	// The Service selects the bot's Pod, on its 8080 (the EndpointSlice
	// controller says so), and kube-proxy routes its ClusterIP there.
	svcPort := func() bool {
		slices, err := c.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=alfred"})
		if err != nil {
			t.Fatal(err)
		}
		for _, sl := range slices.Items {
			for _, e := range sl.Endpoints {
				for _, p := range sl.Ports {
					if e.TargetRef != nil && e.TargetRef.Name == pod.Name && p.Port != nil && *p.Port == 8080 && eq(e.Conditions.Ready, true) {
						return true
					}
				}
			}
		}
		return false
	}
	for deadline := time.Now().Add(15 * time.Second); !svcPort(); time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("no ready endpoint %s:8080 behind the Service alfred within 15 s", pod.Name)
			break
		}
	}

	svc, err := c.client.CoreV1().Services(ns).Get(ctx, "alfred", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := forwardPort(t, c, ns, pod.Name, 8080)
	for _, via := range []struct{ name, addr string }{
		{"the Service's ClusterIP", fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)},
		{"a port-forward", fmt.Sprintf("127.0.0.1:%d", port)},
	} {
		for _, probe := range []struct{ path, body string }{{"/healthz", "ok\n"}, {"/readyz", "ready\n"}} {
			code, body := waitAnswer(t, "http://"+via.addr+probe.path, probe.body, 15*time.Second)
			if code != http.StatusOK || body != probe.body {
				t.Errorf("GET %s through %s (%s) = %d %q; want 200 %q", probe.path, via.name, via.addr, code, body, probe.body)
			}
		}
	}
}

// waitBound waits for the PVC name in ns to be Bound, by class; on a
// timeout it fails with the claim's state and events.
func waitBound(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name, class string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var last *corev1.PersistentVolumeClaim
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("PVC %s/%s: %v", ns, name, err)
		}
		last = pvc
		if pvc.Status.Phase == corev1.ClaimBound {
			if got := ptr.Deref(pvc.Spec.StorageClassName, ""); got != class {
				t.Errorf("PVC %s bound by the class %q; want the default %q", name, got, class)
			}
			return pvc
		}
	}
	var b strings.Builder
	if evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "\nevent %s: %s", e.Reason, e.Message)
		}
	}
	t.Fatalf("PVC %s/%s not Bound within a minute: %+v%s", ns, name, last.Status, b.String())
	return nil
}

// imageAcceptsRunner tells whether the bot of image accepts ALFRED_RUNNER=v,
// by its own `alfred config reference`.
func imageAcceptsRunner(t *testing.T, image, v string) bool {
	t.Helper()
	out := newDocker(t).Must(t, "run", "--rm", "--network", "none", image, "config", "reference")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "`ALFRED_RUNNER`") {
			return strings.Contains(line, v)
		}
	}
	t.Fatalf("%s config reference lists no ALFRED_RUNNER:\n%s", image, out)
	return false
}

// waitReady waits for the one Pod of selector in ns to be Ready; on a
// timeout it fails with the Pod's state, events and log.
func waitReady(t *testing.T, ctx context.Context, c *cluster, ns, selector string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 1 {
			t.Fatalf("%d Pods of the Deployment; want one", len(pods.Items))
		}
		crashed := false
		if len(pods.Items) == 1 {
			last = &pods.Items[0]
			for _, cond := range last.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return last
				}
			}
			for _, s := range last.Status.ContainerStatuses {
				crashed = crashed || s.RestartCount > 0
			}
		}
		if crashed {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var b strings.Builder
	if last == nil {
		fmt.Fprintf(&b, "no Pod of %s in %s", selector, ns)
	} else {
		fmt.Fprintf(&b, "Pod %s not Ready (within %s, or its container exited): phase %s, containers %+v\n", last.Name, timeout, last.Status.Phase, last.Status.ContainerStatuses)
		if evs, err := c.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, e := range evs.Items {
				fmt.Fprintf(&b, "event %s %s: %s %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		previous := len(last.Status.ContainerStatuses) > 0 && last.Status.ContainerStatuses[0].RestartCount > 0
		if log, err := c.client.CoreV1().Pods(ns).GetLogs(last.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx); err == nil {
			fmt.Fprintf(&b, "log:\n%s", log)
		}
	}
	t.Fatal(b.String())
	return nil
}

// forwardPort forwards a free local port to the Pod's port through the API
// server and the kubelet (as kubectl port-forward does) until the test ends.
func forwardPort(t *testing.T, c *cluster, ns, pod string, port int) int {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	u := c.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path})
	stop, ready := make(chan struct{}), make(chan struct{})
	var out bytes.Buffer
	fw, err := portforward.New(dialer, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, &out)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	t.Cleanup(func() { close(stop); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward to %s/%s:%d: %v %s", ns, pod, port, err, out.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("port-forward to %s/%s:%d: not ready within 20 s", ns, pod, port)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("port-forward ports %v: %v", ports, err)
	}
	return int(ports[0].Local)
}

// waitAnswer asks url until it answers 200 with want, or timeout passes,
// and returns the last answer. kube-proxy programs a new Service's rules
// after its endpoints are ready, not with them: until then a packet to the
// ClusterIP leaves by the host's default route, where this machine's egress
// answers any port 80 with an empty 404.
func waitAnswer(t *testing.T, url, want string, timeout time.Duration) (int, string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := waitHTTP(t, url, time.Until(deadline))
		if code == http.StatusOK && body == want || time.Now().After(deadline) {
			return code, body
		}
		time.Sleep(300 * time.Millisecond)
	}
}
