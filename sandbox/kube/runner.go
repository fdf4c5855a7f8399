package kube

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Labels of every object the runner makes; the first three are the Docker
// runner's. LabelPod names one run's Pod and the objects made for it.
const (
	LabelManaged  = sandbox.LabelManaged
	LabelInstance = sandbox.LabelInstance
	LabelRunner   = sandbox.LabelRunner
	LabelPod      = "alfred.pod"
)

// Defaults of Options.
const (
	DefaultStartTimeout        = 2 * time.Minute
	DefaultCopyOutMaxBytes     = 2 << 30   // a copy-out's whole stream
	DefaultCopyOutMaxFileBytes = 512 << 20 // one file of a copy-out
)

// Default requests of the agent container: small, so that many runs fit a node.
var (
	DefaultRequestCPU    = resource.MustParse("100m")
	DefaultRequestMemory = resource.MustParse("256Mi")
)

// The client's own rate limit, shared by every run of the Runner. client-go's
// default, 5 requests a second in bursts of 10, made 16 runs at once wait
// on each other for tens of seconds (their Pods, Secrets, NetworkPolicies,
// log streams and deletions); the API server's priority and fairness
// protects it from a busy bot.
const (
	clientQPS   = 100
	clientBurst = 200
)

// teardownTimeout bounds each call made after a run ends, which must not
// depend on the caller's (possibly canceled) context.
const teardownTimeout = 30 * time.Second

// Options tune the Kubernetes runner.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file; empty means the in-cluster
	// configuration (the bot runs in a Pod with a service account).
	Kubeconfig string
	// Namespace holds the Pods; empty means the kubeconfig context's (or the
	// service account's) namespace, else "default".
	Namespace string
	// Instance names this bot installation: every object carries it in a
	// label and Cleanup removes only this instance's. Empty means "default".
	Instance string
	// Timeout applies when a Spec has none; 0 means sandbox.DefaultTimeout.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL at the timeout or a
	// cancel; 0 means sandbox.DefaultKillGrace.
	KillGrace time.Duration
	// NanoCPUs and MemoryBytes are the agent container's limits when a Spec
	// leaves them at 0; 0 means one CPU and 2 GiB.
	NanoCPUs, MemoryBytes int64
	// RequestCPU and RequestMemory are the agent container's requests (what
	// the scheduler reserves); zero means 100m and 256Mi. A request above the
	// limit is lowered to it.
	RequestCPU, RequestMemory resource.Quantity
	// ImagePullPolicy of the Pod's containers; empty means IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// StartTimeout bounds the wait for the Pod to be scheduled, its image
	// pulled and the agent started; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// CopyOutMaxBytes bounds what one copy-out brings back from a Pod: its
	// whole tar stream (the agent's stderr, the worktree and the session
	// folder; each file's bytes, and 512 bytes an entry).
	// CopyOutMaxFileBytes bounds one file of it. The Pod's content is the
	// agent's: a stream over either is cut at once and the copy-out fails
	// with an error naming the entry and the limit; what arrived before it
	// stays on the host, and nothing is removed there. 0 means
	// DefaultCopyOutMaxBytes (2 GiB) and DefaultCopyOutMaxFileBytes
	// (512 MiB).
	CopyOutMaxBytes, CopyOutMaxFileBytes int64
	// Relay is a static alfred-forward on the bot's machine, copied into
	// the Pods that relay the model gateway's socket (see binds.go); empty:
	// the image's alfred-forward, found on its PATH.
	Relay string
	// Logger receives debug and warning records; nil means slog.Default().
	Logger *slog.Logger
}

// Runner runs each Spec in a fresh Pod and deletes it afterwards,
// whatever the outcome. See the package documentation and README.md.
type Runner struct {
	client    kubernetes.Interface
	config    *rest.Config
	namespace string
	opts      Options
	id        string
	log       *slog.Logger
	running   atomic.Int64 // Pods created and not yet deleted
}

// New connects to the cluster and checks that the API server
// answers and that the namespace exists.
func New(ctx context.Context, opts Options) (*Runner, error) {
	config, namespace, err := loadConfig(opts)
	if err != nil {
		return nil, err
	}
	if config.QPS == 0 && config.RateLimiter == nil {
		config.QPS, config.Burst = clientQPS, clientBurst
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("kube: client for %s: %w", config.Host, err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := checkNamespace(checkCtx, client, namespace); err != nil {
		return nil, fmt.Errorf("kube: the API server at %s does not show namespace %q (is the server up, the namespace created, and may this user list its Pods?): %w", config.Host, namespace, err)
	}
	opts = withDefaults(opts)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	id := randomHex(8)
	log = log.With("runner", "kubernetes", "runner_id", id, "namespace", namespace)
	// No API shows a node's podPidsLimit to a namespaced user (the kubelet's
	// configz needs nodes/proxy), nor does a container see its Pod's cgroup:
	// the runner can only say where the limit comes from.
	log.Info("each run's processes are bounded by the nodes' kubelet podPidsLimit only (a Pod has no PIDs field); set it in their KubeletConfiguration, e.g. 1024")
	return &Runner{client: client, config: config, namespace: namespace, opts: opts, id: id, log: log}, nil
}

// loadConfig reads the kubeconfig (or the in-cluster configuration) and
// picks the namespace.
func loadConfig(opts Options) (*rest.Config, string, error) {
	if opts.Kubeconfig == "" {
		config, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kube: no kubeconfig given and not in a cluster: %w", err)
		}
		ns := opts.Namespace
		if ns == "" {
			b, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
			ns = strings.TrimSpace(string(b))
		}
		return config, cmp.Or(ns, "default"), nil
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: opts.Kubeconfig}, &clientcmd.ConfigOverrides{})
	config, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kube: kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	ns := opts.Namespace
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil {
			return nil, "", fmt.Errorf("kube: namespace of kubeconfig %s: %w", opts.Kubeconfig, err)
		}
	}
	return config, cmp.Or(ns, "default"), nil
}

func withDefaults(opts Options) Options {
	opts.Instance = cmp.Or(opts.Instance, "default")
	if opts.KillGrace <= 0 {
		opts.KillGrace = sandbox.DefaultKillGrace
	}
	if opts.Timeout <= 0 {
		opts.Timeout = sandbox.DefaultTimeout
	}
	if opts.NanoCPUs <= 0 {
		opts.NanoCPUs = sandbox.DefaultNanoCPUs
	}
	if opts.MemoryBytes <= 0 {
		opts.MemoryBytes = sandbox.DefaultMemoryBytes
	}
	if opts.RequestCPU.IsZero() {
		opts.RequestCPU = DefaultRequestCPU
	}
	if opts.RequestMemory.IsZero() {
		opts.RequestMemory = DefaultRequestMemory
	}
	if opts.ImagePullPolicy == "" {
		opts.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.CopyOutMaxBytes <= 0 {
		opts.CopyOutMaxBytes = DefaultCopyOutMaxBytes
	}
	if opts.CopyOutMaxFileBytes <= 0 {
		opts.CopyOutMaxFileBytes = DefaultCopyOutMaxFileBytes
	}
	return opts
}

// Name returns "kubernetes".
func (r *Runner) Name() string { return "kubernetes" }

// Close releases nothing today (client-go keeps no connection to close); it
// is there so the bot treats every runner alike.
func (r *Runner) Close() error { return nil }

// Running returns how many Pods Run created and has not deleted yet (one
// whose deletion failed stays counted: it may still be there).
func (r *Runner) Running() int { return int(r.running.Load()) }

// Namespace returns the namespace of the runner's Pods.
func (r *Runner) Namespace() string { return r.namespace }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// checkNamespace asks for the namespace, which the bot's Role may not allow
// (namespaces are cluster-wide): then listing one of its Pods, which the Role
// allows, shows at least that the server answers and the bot may work there.
func checkNamespace(ctx context.Context, client kubernetes.Interface, namespace string) error {
	_, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		return err
	}
	_, err = client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}
