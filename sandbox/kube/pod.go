package kube

import (
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Container names.
const (
	ctrHelper = "helper" // sleeps beside the agent: staging, stderr, signals, copy-out
	ctrAgent  = "agent"
)

// agentWrapper runs as `/bin/sh -c agentWrapper alfred-run MARK UNSET ARGV...`:
// it takes stdin from the staged file and sends stderr to a file (so the
// container's log is stdout only), removes the variables the kubelet and the
// shell add (KUBERNETES_*, and those of UNSET, e.g. "SHLVL PWD"), runs ARGV,
// then writes "\nMARK CODE\n" to stdout and exits CODE, ARGV's exit code: the
// runner learns the end from the log without waiting for the kubelet to
// notice it (endline.go). Nothing of the Spec is parsed by the shell: it is
// "$@", exec'd in a subshell (so a name like eval is a program, never a
// builtin, as with exec alone); m is not exported. The wrapper catches
// SIGTERM (a caught signal is the default again in ARGV) and waits: the
// agent alone decides how it ends within the grace period, as its
// container would end (and kill it) with the wrapper.
const agentWrapper = `exec <` + runDir + `/stdin 2>>` + runDir + `/stderr || exit 126
p=${KUBERNETES_SERVICE_PORT:-443}
case $p in *[!0-9]*) p=443 ;; esac
m=$1
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT KUBERNETES_SERVICE_PORT_HTTPS KUBERNETES_PORT \
  KUBERNETES_PORT_${p}_TCP KUBERNETES_PORT_${p}_TCP_PROTO KUBERNETES_PORT_${p}_TCP_PORT KUBERNETES_PORT_${p}_TCP_ADDR p $2
shift 2
trap : TERM
(exec "$@")
c=$?
printf '\n%s %d\n' "$m" "$c"
exit "$c"`

// Control files at the root of the run volume, which the agent does not see
// (it mounts only its subDir: stdin and stderr). stagedFlag holds the PID of
// the staging shell once the staging is complete; stagedFIFO is the
// postStart hook's, which the staging writes a line to when it is done.
const (
	stagedFlag = stageDir + "/" + volRun + "/staged"
	stagedFIFO = stageDir + "/" + volRun + "/staged.fifo"
	stderrFile = stageDir + "/" + volRun + "/" + subDir + "/stderr"
)

// stageWait is the helper's postStart hook: it waits for the staging to be
// complete, at most limit. The kubelet creates and starts the next
// container, the agent, only when the hook has returned, so the agent's
// mounts find the folders the staging made, without an init container whose
// end the kubelet would notice at its next relist only (up to a second).
//
// It blocks, it does not poll: a loop of sleeps costs a process every tick,
// and 16 Pods starting at once on a small node spent a core on them. The
// hook makes a FIFO and holds it open for reading and writing before it
// looks at the flag, so the staging's line (written after the flag, through
// a read-write open that never blocks) is either kept for it or came after a
// flag it sees. A timer writes "t" at the limit; the sleep it leaves behind
// ends by itself, and holds none of the hook's output (the kubelet waits for
// the end of a hook's output, not only of its shell).
func stageWait(limit time.Duration) []string {
	secs := max(int64(limit/time.Second), 1)
	return []string{"/bin/sh", "-c", "f=" + stagedFIFO + "\n" +
		"[ -p \"$f\" ] || mkfifo -m 600 \"$f\" || exit 1\n" +
		"exec 3<>\"$f\"\n" +
		"{ sleep " + strconv.FormatInt(secs, 10) + "; echo t >&3; } </dev/null >/dev/null 2>&1 &\n" +
		"until [ -s " + stagedFlag + " ]; do\n" +
		"  read -r x <&3 || exit 1\n" +
		"  [ \"$x\" = t ] && exit 1\n" +
		"done\n" +
		"kill $! 2>/dev/null\n" +
		"exit 0"}
}

// pod is the run's Pod.
func (r *Runner) pod(p *plan) *corev1.Pod {
	labels, annotations := r.podLabels(p)
	vols, stageMounts, agentMounts := volumes(p)
	helper := r.container(p, ctrHelper, []string{"sleep", "2147483647"}, stageMounts, helperResources())
	// Hook commands are not expanded by the kubelet: no escape.
	helper.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: stageWait(r.opts.StartTimeout)}}}
	agent := r.agentContainer(p, agentMounts)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			ShareProcessNamespace:         ptr.To(true),
			TerminationGracePeriodSeconds: ptr.To(int64(math.Ceil(r.opts.KillGrace.Seconds()))),
			// A safety net for a bot that died: the kubelet ends the Pod.
			ActiveDeadlineSeconds: ptr.To(int64((r.opts.StartTimeout + p.timeout + r.opts.KillGrace).Seconds()) + 300),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(p.spec.UID)),
				RunAsGroup:     ptr.To(int64(p.spec.GID)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			// The helper first: the kubelet starts it, runs its postStart
			// hook to its end, then starts the agent.
			Containers: []corev1.Container{helper, agent},
			Volumes:    vols,
		},
	}
}

// container is a container of the Pod locked down like the agent.
func (r *Runner) container(p *plan, name string, command []string, mounts []corev1.VolumeMount, res corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           p.spec.Image,
		ImagePullPolicy: r.opts.ImagePullPolicy,
		Command:         escape(command),
		VolumeMounts:    mounts,
		Resources:       res,
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(int64(p.spec.UID)),
			RunAsGroup:               ptr.To(int64(p.spec.GID)),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// agentContainer runs the wrapper, then Prefix+Argv, with the Spec's
// environment plus HOME, its limits and the runner's requests.
func (r *Runner) agentContainer(p *plan, mounts []corev1.VolumeMount) corev1.Container {
	unset := []string{}
	for _, v := range []string{"SHLVL", "PWD"} {
		if _, ok := p.spec.Env[v]; !ok {
			unset = append(unset, v)
		}
	}
	command := append([]string{"/bin/sh", "-c", agentWrapper, "alfred-run", p.endMark, strings.Join(unset, " ")}, p.argv...)
	c := r.container(p, ctrAgent, command, mounts, r.agentResources(p.spec))
	c.WorkingDir = p.workdir
	c.Env = envVars(p.spec.Env)
	return c
}

// envVars is env with HOME set to sandbox.AgentHome, sorted, escaped.
func envVars(env map[string]string) []corev1.EnvVar {
	all := maps.Clone(env)
	if all == nil {
		all = map[string]string{}
	}
	all["HOME"] = sandbox.AgentHome
	vars := make([]corev1.EnvVar, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		vars = append(vars, corev1.EnvVar{Name: k, Value: escapeOne(all[k])})
	}
	return vars
}

// escape protects a command from the kubelet's $(VAR) expansion: "$$"
// becomes "$" and nothing else is expanded, so every "$" is doubled.
func escape(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = escapeOne(s)
	}
	return out
}

func escapeOne(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// agentResources: limits of the Spec or the runner, requests of the runner
// (never above the limits). The PIDs limit has no Pod field: the node's
// podPidsLimit applies.
func (r *Runner) agentResources(spec *sandbox.Spec) corev1.ResourceRequirements {
	cpu := resource.NewMilliQuantity(positiveOr(spec.NanoCPUs, r.opts.NanoCPUs)/1_000_000, resource.DecimalSI)
	mem := resource.NewQuantity(positiveOr(spec.MemoryBytes, r.opts.MemoryBytes), resource.BinarySI)
	reqCPU, reqMem := r.opts.RequestCPU.DeepCopy(), r.opts.RequestMemory.DeepCopy()
	if reqCPU.Cmp(*cpu) > 0 {
		reqCPU = cpu.DeepCopy()
	}
	if reqMem.Cmp(*mem) > 0 {
		reqMem = mem.DeepCopy()
	}
	return corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *mem},
		Requests: corev1.ResourceList{corev1.ResourceCPU: reqCPU, corev1.ResourceMemory: reqMem},
	}
}

// helperResources bound the stage and helper containers (tar, tail, sleep).
func helperResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
	}
}

func positiveOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// volumes are the Pod's volumes, where the stage and helper containers mount
// them (every staged volume under stageDir) and where the agent does (the
// staged volumes through their subDir, which the staging made with the
// user's owner and mode).
func volumes(p *plan) (vols []corev1.Volume, stage, agent []corev1.VolumeMount) {
	add := func(name string, src corev1.VolumeSource, target string, readOnly bool) {
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		stage = append(stage, corev1.VolumeMount{Name: name, MountPath: stageDir + "/" + name})
		if target != "" {
			agent = append(agent, corev1.VolumeMount{Name: name, MountPath: target, SubPath: subDir, ReadOnly: readOnly})
		}
	}
	disk := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	add(volRun, disk, runDir, false)
	add(volHome, memory(0), sandbox.AgentHome, false)
	if w := p.worktree; w != nil {
		add(volWorkspace, disk, sandbox.WorkspacePath, w.ReadOnly)
	}
	if s := p.session; s != nil {
		add(volSession, disk, s.Container, false)
	}
	for _, t := range p.tmpfs {
		add(t.name, memory(t.Size), t.Path, false)
	}
	for _, bd := range p.binds {
		add(bd.name, disk, bd.dir, false)
	}
	for n := range p.creds {
		v, m := credentialVolume(p, n)
		vols, agent = append(vols, v), append(agent, m)
	}
	slices.SortStableFunc(agent, func(a, b corev1.VolumeMount) int {
		return strings.Count(path.Clean(a.MountPath), "/") - strings.Count(path.Clean(b.MountPath), "/")
	})
	return vols, stage, agent
}

func memory(size int64) corev1.VolumeSource {
	src := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
	if size > 0 {
		src.SizeLimit = resource.NewQuantity(size, resource.BinarySI)
	}
	return corev1.VolumeSource{EmptyDir: src}
}

// ownLabels are the runner's labels of every object of run p.
func (r *Runner) ownLabels(p *plan) map[string]string {
	return map[string]string{
		LabelManaged:  "true",
		LabelInstance: r.opts.Instance,
		LabelRunner:   r.id,
		LabelPod:      p.name,
	}
}

// podLabels are the Spec's labels plus the runner's own, which win. A Spec
// label whose value is no valid label value becomes an annotation; one whose
// key is invalid too is dropped.
func (r *Runner) podLabels(p *plan) (labels, annotations map[string]string) {
	labels, annotations = map[string]string{}, map[string]string{}
	for k, v := range p.spec.Labels {
		switch {
		case len(content.IsLabelKey(k)) > 0:
			r.log.Warn("dropping a Spec label whose key is not a valid Kubernetes key", "key", k)
		case len(content.IsLabelValue(v)) > 0:
			annotations[k] = v
		default:
			labels[k] = v
		}
	}
	maps.Copy(labels, r.ownLabels(p))
	delete(labels, LabelSealed)
	if p.denyNet {
		labels[LabelSealed] = "true"
	}
	return labels, annotations
}
