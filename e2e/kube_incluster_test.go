package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2EKubernetesInCluster is the deployment proof on Kubernetes: the bot
// runs in the cluster as `kubectl apply -k` of the shipped manifests
// (deploy/kubernetes) makes it, through an overlay of this test that
// changes only what a test must (inClusterOverlay says what and why). Its
// PVC is Bound by the cluster's default StorageClass, its probes turn it
// Ready, and it works an issue of the suite's real Gitea: its runs are Pods
// it creates through the Service default/kubernetes with its
// ServiceAccount's token (InClusterConfig: the API server's audit log names
// the account and the bot's Pod address). Its Pod is then deleted while the
// agent of a run for a red CI works: the Deployment's next Pod opens the
// state left on the volume, finds the run interrupted, removes its Pod, runs
// it again resuming the session, and the issue ends done with nothing left.
func TestE2EKubernetesInCluster(t *testing.T) {
	started := time.Now()
	k := newKube(t)
	env := inClusterEnv(t)
	in := giteatest.FromEnv(t, "gitea")
	w := newGiteaWorld(t, in)
	_, agentImg, instance := agentImage(t)
	for _, image := range []string{env.botImage, agentImg} {
		importImage(t, image)
	}
	model := startModel(t)

	// The host's loopback services, as the Pods reach them: a relay on the
	// node's address on the Pod bridge for each, behind a Service of its own.
	o := overlay{
		Base: filepath.Join(repoRoot(t), "deploy", "kubernetes"), Namespace: "alfred-e2e-" + randomSuffix(t),
		BotImage: env.botImage, AgentImage: agentImg, Instance: instance, NodeIP: env.nodeIP,
		ForgeURL: in.URL, ForgeToken: in.Bot.Token, APIKey: apiKey, TestImage: env.testImage,
	}
	o.ForgePort = portOf(t, in.URL)
	o.ForgeRelayPort = relay(t, env.nodeIP+":0", hostOf(t, in.URL))
	o.ModelRelayPort = relay(t, env.nodeIP+":0", hostOf(t, model.URL))
	k.namespace = o.Namespace
	t.Cleanup(func() { k.deleteNamespace(o.Namespace) })
	// The webhooks and the pages: a relay on this host's loopback (the
	// forge sends webhooks to loopback only) to the Service alfred, as an
	// Ingress would; it outlives the bot's Pods.
	o.PublicAddr = fmt.Sprintf("127.0.0.1:%d", relayLazy(t, "127.0.0.1:0", func() string { return k.serviceAddr("alfred") }))

	t0 := time.Now()
	out, err := exec.Command(env.kubectl, "--kubeconfig", k.kubeconfig, "apply", "-k", o.write(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k of the test overlay: %v\n%s", err, out)
	}
	pvc := k.waitBound("alfred-data")
	first := k.waitBot("", time.Minute)
	t.Logf("kubectl apply -k: PVC Bound, bot Pod %s Ready in %s", first.Name, time.Since(t0).Round(time.Millisecond))
	k.noKubeconfig(first)

	owner, name, _ := strings.Cut(w.project(), "/")
	// The volume holds the state repository and the data folder (configmap.yaml).
	b := &bot{t: t, addr: o.PublicAddr, state: filepath.Join(pvc, "state.git"), data: filepath.Join(pvc, "data"), model: model}
	s := &scenario{t: t, w: w, b: b, instance: instance, owner: owner, name: name}
	defer s.sayRunsIfFailed()
	if out := k.execBot(env.kubectl, first.Name, "alfred", "labels", "sync", "-project", w.project()); !strings.Contains(out, "19 labels created") {
		t.Fatalf("labels sync in the bot's Pod: %s", out)
	}
	w.hook("http://"+o.PublicAddr+"/webhooks/forgejo", "s3cret")
	waitFor(t, 2*time.Minute, "claude-code detected as resumable", func() (ok bool) {
		b.look(func(st *state.Store) {
			all, _ := st.Installations()
			for _, in := range all {
				ok = ok || in.AdapterID == "claude-code" && in.Image == agentImg && in.ResumableSessions
			}
		})
		return ok
	})

	s.toPullRequest()
	k.runPodsByBot(env.auditLog, first)

	// The bot's Pod deleted in the middle of a run: the Deployment's next one
	// finds the run interrupted in the state on the volume, removes the run's
	// Pod and runs it again, resuming the session.
	second := k.botGoneMidRun(s, first.Name)
	k.runPodsByBot(env.auditLog, second)
	s.sealed()
	s.w.close(s.n)
	s.waitStatus("done")
	s.stateGone()
	k.nothingLeft(instance)
	t.Logf("e2e with the bot in the cluster: wall time %s; webhook to the agent being started %s", time.Since(started).Round(time.Millisecond), s.webhookToAgent.Round(time.Millisecond))
}

// inClusterConf is what the in-cluster test reads from make test's variables.
type inClusterConf struct {
	botImage, testImage, nodeIP, auditLog, kubectl string
}

func inClusterEnv(t *testing.T) inClusterConf {
	const why = "the test cluster of scripts/k8s.sh start"
	return inClusterConf{
		botImage:  need(t, "ALFRED_TEST_BOT_IMAGE", "the bot image scripts/images.sh builds"),
		testImage: need(t, "ALFRED_TEST_K8S_IMAGE", why),
		nodeIP:    need(t, "ALFRED_TEST_K8S_NODE_IP", why),
		auditLog:  need(t, "ALFRED_TEST_K8S_AUDIT_LOG", why),
		kubectl:   need(t, "ALFRED_TEST_K8S_KUBECTL", why),
	}
}

// overlay is the test's kustomization over deploy/kubernetes.
type overlay struct {
	Base, Namespace, BotImage, AgentImage, Instance, NodeIP, TestImage string
	ForgeURL, ForgeToken, APIKey, PublicAddr                           string
	ForgePort, ForgeRelayPort, ModelRelayPort                          int
}

// inClusterOverlay changes what a test must, and says why:
//   - the namespace (one per run), the images (imported, never pulled), the
//     forge, the instance, the agent image and the test's pace (ConfigMap);
//   - the Secret the operator makes (secret.example.yaml), from literals;
//   - the forge and the mock model listen on this host's loopback: a relay
//     of the test on the node's address on the Pod bridge for each, behind a
//     Service without selector and an EndpointSlice naming that address
//     (e2e-forge, e2e-model). There is no DNS: the bot finds the model by
//     the variables the kubelet sets for a Service (E2E_MODEL_SERVICE_HOST);
//   - the forge names itself by its loopback URL in the clone URLs it
//     answers, and the bot sends its token to the forge URL's origin only:
//     a sidecar (busybox nc) listens on the Pod's own loopback at the
//     forge's port and relays to the Service e2e-forge, so that the forge URL
//     inside the Pod is the forge's own;
//   - the probes run every second (the same httpGet).
var inClusterOverlay = template.Must(template.New("overlay").Parse(`# kustomization.yaml
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {{.Namespace}}
resources:
  - {{.Base}}
  - hosts.yaml
images:
  - name: alfred
    newName: {{.BotImageName}}
    newTag: "{{.BotImageTag}}"
secretGenerator:
  - name: alfred-secrets
    options: {disableNameSuffixHash: true}
    literals:
      - ALFRED_FORGE_TOKEN={{.ForgeToken}}
      - ALFRED_WEBHOOK_SECRETS=s3cret
      - ANTHROPIC_API_KEY={{.APIKey}}
patches:
  - path: config.yaml
  - path: deployment.yaml
# config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: alfred-config
  namespace: alfred
data:
  ALFRED_PUBLIC_URL: "http://{{.PublicAddr}}"
  ALFRED_FORGE: "forgejo"
  ALFRED_FORGE_URL: "{{.ForgeURL}}"
  ALFRED_AGENT_IMAGE: "{{.AgentImage}}"
  ALFRED_AGENT_ENV: "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY"
  ALFRED_INSTANCE: "{{.Instance}}"
  ALFRED_PUBLIC_PROJECTS: "*"
  ALFRED_POLL_INTERVAL: "300ms"
# deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: alfred
  namespace: alfred
spec:
  template:
    spec:
      containers:
        - name: alfred
          imagePullPolicy: Never
          env:
            - name: ANTHROPIC_BASE_URL
              value: "http://$(E2E_MODEL_SERVICE_HOST):$(E2E_MODEL_SERVICE_PORT)"
          startupProbe: {periodSeconds: 1}
          readinessProbe: {periodSeconds: 1}
        - name: forge-loopback
          image: {{.TestImage}}
          imagePullPolicy: Never
          command: ["sh", "-c", "exec nc -ll -p {{.ForgePort}} -e nc \"$E2E_FORGE_SERVICE_HOST\" \"$E2E_FORGE_SERVICE_PORT\""]
          resources:
            limits: {cpu: 200m, memory: 64Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities: {drop: ["ALL"]}
            seccompProfile: {type: RuntimeDefault}
# hosts.yaml
{{range $s := .Hosts}}---
apiVersion: v1
kind: Service
metadata:
  name: {{$s.Name}}
spec:
  ports: [{name: tcp, port: {{$s.Port}}, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {{$s.Name}}-host
  labels: {kubernetes.io/service-name: {{$s.Name}}}
addressType: IPv4
ports: [{name: tcp, port: {{$s.RelayPort}}, protocol: TCP}]
endpoints: [{addresses: ["{{$.NodeIP}}"]}]
{{end}}`))

// hostService is a Service of the overlay for a relay on the node.
type hostService struct {
	Name            string
	Port, RelayPort int
}

// BotImageName and BotImageTag split the bot image's reference for
// kustomize's images (a name and a tag apart).
func (o overlay) BotImageName() string { n, _ := o.splitImage(); return n }

func (o overlay) BotImageTag() string { _, tag := o.splitImage(); return tag }

func (o overlay) splitImage() (string, string) {
	i := strings.LastIndex(o.BotImage, ":")
	if i < 0 || strings.Contains(o.BotImage[i:], "/") {
		return o.BotImage, "latest"
	}
	return o.BotImage[:i], o.BotImage[i+1:]
}

// Hosts are the overlay's Services for the host's services.
func (o overlay) Hosts() []hostService {
	return []hostService{{"e2e-forge", 3000, o.ForgeRelayPort}, {"e2e-model", 8080, o.ModelRelayPort}}
}

// write renders the overlay into files of a folder and returns it.
func (o overlay) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes a base by a relative path only.
	base, err := filepath.Rel(dir, o.Base)
	if err != nil {
		t.Fatal(err)
	}
	o.Base = base
	var b strings.Builder
	if err := inClusterOverlay.Execute(&b, o); err != nil {
		t.Fatal(err)
	}
	var file *os.File
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "# "); ok && strings.HasSuffix(strings.TrimSpace(name), ".yaml") && !strings.Contains(name, " ") {
			if file != nil {
				file.Close()
			}
			f, err := os.Create(filepath.Join(dir, strings.TrimSpace(name)))
			if err != nil {
				t.Fatal(err)
			}
			file = f
			continue
		}
		if file == nil {
			t.Fatalf("overlay text before its first file name: %q", line)
		}
		io.WriteString(file, line)
	}
	file.Close()
	return dir
}

// botGoneMidRun holds a ci_fix run back, deletes the bot's Pod (named old)
// while the run's agent runs, and checks that the next bot Pod ran the
// run again once, resumed, with no comment doubled and the held run's Pod
// gone. It returns the new bot Pod.
func (k *kube) botGoneMidRun(s *scenario, old string) corev1.Pod {
	t := s.t
	before, comments := len(s.runs), s.kinds()
	slow := filepath.Join(s.stateDir(), "e2e-slow") // on the volume, seen from the host
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.w.status(s.mb.HeadSHA, "failure", "1 test failed")
	held := k.heldAgentPod(s).Name
	if err := os.Remove(slow); err != nil { // the held Pod has its own copy
		t.Fatal(err)
	}
	t1 := time.Now()
	if err := k.client.CoreV1().Pods(k.namespace).Delete(context.Background(), old, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the bot's Pod %s: %v", old, err)
	}
	next := k.waitBot(old, 2*time.Minute)
	t.Logf("bot Pod %s deleted while the run Pod %s ran; %s Ready %s later", old, held, next.Name, time.Since(t1).Round(time.Millisecond))
	waitFor(t, 3*time.Minute, "the interrupted ci_fix run again", func() bool {
		s.waitStatus("in_ci")
		return s.mb.CIFixAttempts == 1 && s.lastRun().Phase == "ci_fix" && s.lastRun().Status == state.RunSucceeded
	})
	if len(s.runs) <= before {
		t.Errorf("runs after the restart: %d, before it %d: the records did not carry over", len(s.runs), before)
	}
	s.redoneOnce(comments, 2)
	waitFor(t, time.Minute, "the held run's Pod gone", func() bool {
		_, err := k.client.CoreV1().Pods(k.namespace).Get(context.Background(), held, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	return next
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// importImage copies an image of the suite's Docker daemon into the nodes.
func importImage(t *testing.T, image string) {
	t.Helper()
	if out, err := exec.Command("bash", "../scripts/k8s.sh", "import", image).CombinedOutput(); err != nil {
		t.Fatalf("scripts/k8s.sh import %s: %v\n%s", image, err, out)
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("URL %q: %v", raw, err)
	}
	return u.Host
}

func portOf(t *testing.T, raw string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(hostOf(t, raw))
	if err != nil {
		t.Fatalf("URL %q: no port: %v", raw, err)
	}
	var p int
	fmt.Sscan(port, &p)
	return p
}

// relay listens on listen and copies each connection to and from target,
// until the test ends; it returns the port it listens on.
func relay(t *testing.T, listen, target string) int {
	return relayLazy(t, listen, func() string { return target })
}

// relayLazy is relay to the address target returns at each connection.
func relayLazy(t *testing.T, listen string, target func() string) int {
	t.Helper()
	ln, err := net.Listen("tcp4", listen)
	if err != nil {
		t.Fatalf("listen on %s: %v", listen, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", target(), 5*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
				io.Copy(in, out)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// serviceAddr is the ClusterIP and first port of the Service name.
func (k *kube) serviceAddr(name string) string {
	svc, err := k.client.CoreV1().Services(k.namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || len(svc.Spec.Ports) == 0 {
		return "127.0.0.1:1" // refused: no Service yet
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].Port))
}

// waitBound waits for the PVC name to be Bound and returns its volume's
// folder on this host (the host-path provisioner's).
func (k *kube) waitBound(name string) string {
	ctx := context.Background()
	var path string
	waitFor(k.t, time.Minute, "PVC "+name+" Bound", func() bool {
		pvc, err := k.client.CoreV1().PersistentVolumeClaims(k.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pvc.Status.Phase != corev1.ClaimBound {
			return false
		}
		pv, err := k.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.HostPath == nil {
			k.t.Fatalf("the volume %s of PVC %s: %v (want a host path: scripts/k8s.sh's provisioner)", pvc.Spec.VolumeName, name, err)
		}
		path = pv.Spec.HostPath.Path
		return true
	})
	return path
}

// waitBot waits for a Ready bot Pod other than old and returns it. No
// container of it may have restarted: the ReplicaSet starts the next Pod
// while the deleted one still shuts down, and the next bot waits for the
// state store's lock rather than exits (serve's openWaiting).
func (k *kube) waitBot(old string, d time.Duration) corev1.Pod {
	var ready *corev1.Pod
	var list *corev1.PodList
	for deadline := time.Now().Add(d); ready == nil; time.Sleep(200 * time.Millisecond) {
		var err error
		list, err = k.client.CoreV1().Pods(k.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=bot"})
		if err != nil {
			k.t.Fatalf("list the bot's Pods: %v", err)
		}
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if p.Name != old && p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = &p
				}
			}
		}
		if ready == nil && time.Now().After(deadline) {
			k.t.Fatalf("no bot Pod Ready within %s:%s", d, k.describe(list.Items))
		}
	}
	for _, c := range ready.Status.ContainerStatuses {
		if c.RestartCount > 0 {
			k.t.Errorf("container %s of the bot's Pod %s restarted %d times (last: %+v)", c.Name, ready.Name, c.RestartCount, c.LastTerminationState.Terminated)
		}
	}
	return *ready
}

// describe tells the state, the events and the logs of pods.
func (k *kube) describe(pods []corev1.Pod) string {
	ctx := context.Background()
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\nPod %s: phase %s, conditions %+v", p.Name, p.Status.Phase, p.Status.Conditions)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "\n  container %s: ready %v, restarts %d, state %+v, last %+v", c.Name, c.Ready, c.RestartCount, c.State, c.LastTerminationState)
			log, err := k.client.CoreV1().Pods(k.namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: new(int64(40))}).DoRaw(ctx)
			fmt.Fprintf(&b, "\n  log (%v):\n%s", err, log)
		}
	}
	if evs, err := k.client.CoreV1().Events(k.namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "\nevent %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// noKubeconfig checks that the bot can only use InClusterConfig: no
// kubeconfig in its environment, its ServiceAccount's token mounted.
func (k *kube) noKubeconfig(p corev1.Pod) {
	cm, err := k.client.CoreV1().ConfigMaps(k.namespace).Get(context.Background(), "alfred-config", metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	if v := cm.Data["ALFRED_KUBECONFIG"]; v != "" {
		k.t.Errorf("ALFRED_KUBECONFIG = %q in the bot's ConfigMap; want empty (InClusterConfig)", v)
	}
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "KUBECONFIG" || e.Name == "ALFRED_KUBECONFIG" {
				k.t.Errorf("container %s sets %s=%q", c.Name, e.Name, e.Value)
			}
		}
	}
	if p.Spec.ServiceAccountName != "alfred" {
		k.t.Errorf("the bot's Pod runs as ServiceAccount %q; want alfred", p.Spec.ServiceAccountName)
	}
}

// execBot runs a command in the bot's container (kubectl exec).
func (k *kube) execBot(kubectl, pod string, args ...string) string {
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", k.kubeconfig, "-n", k.namespace, "exec", pod, "-c", "alfred", "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		k.t.Fatalf("kubectl exec %s %v: %v\n%s", pod, args, err, out)
	}
	return string(out)
}

// auditEvent is what the test reads of an API server audit event.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	SourceIPs []string `json:"sourceIPs"`
	ObjectRef struct {
		Resource, Namespace, Name string
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// runPodsByBot reads the API server's audit log: the Pods created in the
// namespace other than the bot's own were created by the bot's
// ServiceAccount, from the address of its Pod bot (the Pod network, through
// the Service default/kubernetes), and at least one was.
func (k *kube) runPodsByBot(auditLog string, bot corev1.Pod) {
	f, err := os.Open(auditLog)
	if err != nil {
		k.t.Fatalf("the API server's audit log: %v", err)
	}
	defer f.Close()
	account := "system:serviceaccount:" + k.namespace + ":alfred"
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Verb != "create" || e.ObjectRef.Resource != "pods" || e.ObjectRef.Namespace != k.namespace || e.ResponseStatus.Code != 201 {
			continue
		}
		if e.User.Username == "system:serviceaccount:kube-system:replicaset-controller" {
			continue // the bot's own Pods
		}
		if e.User.Username != account {
			k.t.Errorf("Pod %s created by %s; want the bot's ServiceAccount %s", e.ObjectRef.Name, e.User.Username, account)
		}
		if len(e.SourceIPs) > 0 && e.SourceIPs[0] == bot.Status.PodIP {
			n++
		}
	}
	if n == 0 {
		k.t.Errorf("no run Pod in %s was created from the bot's Pod %s (%s) as %s (audit log %s)", k.namespace, bot.Name, bot.Status.PodIP, account, auditLog)
	}
	k.t.Logf("%d run Pods created by %s from %s", n, account, bot.Status.PodIP)
}

// deleteNamespace deletes the test's namespace (its volume goes with its
// PVC) and waits for it to be gone.
func (k *kube) deleteNamespace(ns string) {
	ctx := context.Background()
	if err := k.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		k.t.Errorf("delete namespace %s: %v", ns, err)
		return
	}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, err := k.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
	}
	k.t.Errorf("namespace %s still there 90 s after its deletion", ns)
}
