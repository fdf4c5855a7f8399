package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// The tests of this file drive a real cluster: the one scripts/k8s.sh starts
// (env=$(scripts/k8s.sh start) && eval "$env"), named by ALFRED_TEST_KUBECONFIG,
// with the busybox image it imports into containerd, named by
// ALFRED_TEST_K8S_IMAGE, and a namespace where Pod Security "restricted" is
// enforced, named by ALFRED_TEST_K8S_NAMESPACE.

const (
	defaultTestImage     = "alfred-test/busybox:latest"
	defaultTestNamespace = "alfred-test"
	// agentUID is the non-root user of the test image (and of the agent image).
	agentUID = 1000
)

// testCluster is a client of the test cluster and where the tests run Pods.
type testCluster struct {
	client    kubernetes.Interface
	namespace string
	image     string
}

// clusterEnv connects to the test cluster, or stops the test: it fails when
// ALFRED_TEST_KUBECONFIG is missing or unusable, and skips only under -short.
func clusterEnv(t testing.TB) testCluster {
	t.Helper()
	path := os.Getenv("ALFRED_TEST_KUBECONFIG")
	if path == "" {
		msg := "ALFRED_TEST_KUBECONFIG is not set: start the test cluster with `env=$(scripts/k8s.sh start) && eval \"$env\"` (as root) and run the tests again"
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("ALFRED_TEST_KUBECONFIG=%s: %v", path, err)
	}
	config.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("client for %s: %v", path, err)
	}
	c := testCluster{client: client, namespace: os.Getenv("ALFRED_TEST_K8S_NAMESPACE"), image: os.Getenv("ALFRED_TEST_K8S_IMAGE")}
	if c.namespace == "" {
		c.namespace = defaultTestNamespace
	}
	if c.image == "" {
		c.image = defaultTestImage
	}
	return c
}

// TestClusterAnswers: the API server answers with the version the script
// built, and the namespace of the tests exists with Pod Security enforced.
func TestClusterAnswers(t *testing.T) {
	c := clusterEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	info, err := c.client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	t.Logf("API server %s (%s)", info.GitVersion, info.Platform)
	if want := os.Getenv("ALFRED_TEST_K8S_VERSION"); want != "" && info.GitVersion != want {
		t.Errorf("API server version %s, want %s (ALFRED_TEST_K8S_VERSION)", info.GitVersion, want)
	}
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, c.namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", c.namespace, err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces Pod Security %q, want restricted", c.namespace, got)
	}
}

// TestClusterRunsAPod runs `echo hello` in a Pod locked down as the agent's
// will be (non-root, no privilege escalation, no capabilities, the runtime's
// seccomp profile, no service account token), streams its log through the
// API server and the kubelet, and deletes it.
func TestClusterRunsAPod(t *testing.T) {
	c := clusterEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := c.client.CoreV1().Pods(c.namespace)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "alfred-kube-test-"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](agentUID),
				RunAsGroup:     ptr.To[int64](agentUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "hello",
				Image:           c.image,
				ImagePullPolicy: corev1.PullNever, // no registry: the image was imported into containerd
				Command:         []string{"echo", "hello"},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod: %v", err)
	}
	name := created.Name
	t.Logf("created Pod %s/%s", c.namespace, name)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	})

	// Wait until the container started (or already ended): its log can then
	// be followed to its end.
	var last *corev1.Pod
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil && s.State.Waiting.Reason != "" && s.State.Waiting.Reason != "ContainerCreating" {
				return false, fmt.Errorf("container waiting: %s: %s", s.State.Waiting.Reason, s.State.Waiting.Message)
			}
		}
		return p.Status.Phase != corev1.PodPending, nil
	})
	if err != nil {
		t.Fatalf("Pod %s did not start: %v\n%s", name, err, describe(last))
	}

	stream, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: "hello", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatalf("stream the log of Pod %s: %v", name, err)
	}
	out, err := io.ReadAll(stream)
	stream.Close()
	if err != nil {
		t.Fatalf("read the log of Pod %s: %v", name, err)
	}
	if string(out) != "hello\n" {
		t.Errorf("log of Pod %s = %q, want %q", name, out, "hello\n")
	}

	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		t.Fatalf("Pod %s did not end: %v\n%s", name, err, describe(last))
	}
	if last.Status.Phase != corev1.PodSucceeded {
		t.Errorf("Pod %s ended %s, want Succeeded\n%s", name, last.Status.Phase, describe(last))
	}
	if st := last.Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
		t.Errorf("container of Pod %s did not exit 0:\n%s", name, describe(last))
	}

	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete Pod %s: %v", name, err)
	}
	deleted = true
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("Pod %s is not gone after its deletion: %v", name, err)
	}
}

// describe prints what a Pod's status says about why it is where it is.
func describe(p *corev1.Pod) string {
	if p == nil {
		return "(no Pod status read)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	if p.Status.Reason != "" || p.Status.Message != "" {
		fmt.Fprintf(&b, " (%s: %s)", p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(&b, "\ncondition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			fmt.Fprintf(&b, "\ncontainer %s waiting: %s: %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Running != nil:
			fmt.Fprintf(&b, "\ncontainer %s running since %s", s.Name, s.State.Running.StartedAt)
		case s.State.Terminated != nil:
			fmt.Fprintf(&b, "\ncontainer %s terminated: exit %d %s: %s", s.Name, s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message)
		}
	}
	return b.String()
}
