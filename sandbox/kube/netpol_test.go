package kube

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The test cluster's Pod bridge (scripts/k8s.sh), when ALFRED_TEST_K8S_POD_BRIDGE
// does not name it; and the port of the test's listener Pod.
const (
	defaultPodBridge = "alfk8s0"
	listenerPort     = 8080
	listenerHello    = "hello-from-the-listener"
)

// netTarget is an address a run tries to connect to.
type netTarget struct {
	name string
	host string // an IPv6 link-local address carries its zone: the Pod's eth0
	port int
	// open: an unsealed run reaches it and gets listenerHello. The Pod's
	// and the node's IPv6 link-local addresses have no route from any Pod
	// of the test cluster once scripts/k8s.sh set it up (IPv6 dropped on
	// the bridge); without that setup a Pod reaches them.
	open bool
	// connects: an unsealed run connects to it (a server that says nothing
	// first, the API server). A sealed run must fail them all.
	connects bool
}

// TestSealedRunHasNoNetwork: a sealed run (the runner's deny-all
// NetworkPolicy) cannot connect to another Pod, to the node or to the API
// server, while an unsealed run reaches the same listener Pod; and the sealed
// run still gets the gateway's answer through the relay (an exec stream
// through the API server, not the Pod network). It needs an enforcing CNI:
// scripts/k8s.sh runs kube-router's NetworkPolicy controller for that.
func TestSealedRunHasNoNetwork(t *testing.T) {
	t.Parallel()
	fwd := staticForwarder(t)
	r := newTestRunner(t, func(o *Options) { o.Relay = fwd })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	targets := append(listenerPod(ctx, t, r.c, ""), nodeListener(t), nodeListenerIPv4(t), apiServerTarget(t, r.c))

	unsealed := r.spec(probeScript(targets))
	unsealed.Network = sandbox.NetworkPod
	res := r.run(t, unsealed)
	got := probeResults(t, "unsealed", res)
	for _, tg := range targets {
		if tg.open && got[tg.name] != "open" || tg.connects && got[tg.name] != "connected" {
			t.Fatalf("the unsealed run did not reach %s (%s): %q; the target is not reachable, so the sealed run's failure would prove nothing", tg.name, net.JoinHostPort(tg.host, strconv.Itoa(tg.port)), res.Stdout)
		}
	}

	sock, seen := gatewaySocket(t)
	sealed := r.spec(`wget -qO- http://127.0.0.1:47080/anthropic/v1/messages; echo; ` + settleScript(targets[0]) + probeScript(targets))
	sealed.Network = sandbox.NetworkNone
	sealed.Binds = []sandbox.Mount{
		{Host: sock, Container: "/run/alfred/gateway.sock"},
		{Host: fwd, Container: "/run/alfred/alfred-forward", ReadOnly: true},
	}
	sealed.Prefix = []string{"/run/alfred/alfred-forward", "-port", "47080", "-socket", "/run/alfred/gateway.sock", "--"}
	res = r.run(t, sealed)
	if !strings.Contains(string(res.Stdout), "model answer for /anthropic/v1/messages") || seen.Load() != 1 {
		t.Errorf("the sealed run did not get the gateway's answer through the relay (%d requests seen): stdout %q, stderr %q", seen.Load(), res.Stdout, res.Stderr)
	}
	got = probeResults(t, "sealed", res)
	t.Logf("the policy took hold %s ms after the sealed agent started", got["settle"])
	for _, tg := range targets {
		if !strings.HasPrefix(got[tg.name], "closed") {
			t.Errorf("the sealed run reached %s (%s): %s", tg.name, net.JoinHostPort(tg.host, strconv.Itoa(tg.port)), got[tg.name])
		}
	}
}

// settleScript waits, at most policySettle, until the listener Pod tg is
// no longer reached, and prints "probe settle MS" (counted in steps of
// 100 ms, the open attempts' own time left out): the enforcer (kube-router)
// programs a new Pod's rules after it sees the Pod's address, so the agent's
// first moments may be open (README: the window, measured here).
func settleScript(tg netTarget) string {
	return fmt.Sprintf(`i=0; while [ $i -lt %d ] && [ "$(nc -w 1 %s %d </dev/null 2>/dev/null)" = %s ]; do sleep 0.1; i=$((i+1)); done; echo "probe settle $((i*100))"`+"\n",
		policySettle/(100*time.Millisecond), tg.host, tg.port, listenerHello)
}

// policySettle bounds the wait for the enforcer to take hold of a new Pod.
const policySettle = 5 * time.Second

// probeScript tries each target with busybox nc (2 s to connect) and prints
// "probe NAME open|connected|closed OUTPUT" lines: open when the target
// said listenerHello, connected when the connection was made and closed
// cleanly without it (busybox nc exits 0), closed otherwise.
func probeScript(targets []netTarget) string {
	var b strings.Builder
	b.WriteString(`probe() { if out=$(nc -w 2 "$2" "$3" </dev/null 2>&1); then if [ "$out" = ` + listenerHello + ` ]; then echo "probe $1 open"; else echo "probe $1 connected $out"; fi; else echo "probe $1 closed $out"; fi; }` + "\n")
	for _, tg := range targets {
		fmt.Fprintf(&b, "probe %s %s %d\n", tg.name, tg.host, tg.port)
	}
	return b.String()
}

// probeResults reads the probe lines of a run: name -> "open", or "closed"
// and what nc said.
func probeResults(t *testing.T, which string, res *sandbox.Result) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "probe" {
			got[f[1]] = strings.Join(f[2:], " ")
		}
	}
	t.Logf("%s run (exit %d): %v", which, res.ExitCode, got)
	if res.ExitCode != 0 || len(got) == 0 {
		t.Fatalf("%s run: exit %d, stdout %q, stderr %q", which, res.ExitCode, res.Stdout, res.Stderr)
	}
	return got
}

// listenerPod runs a Pod answering listenerHello on listenerPort (on node,
// when it is set), deleted when the test ends, and returns its IPv4 address
// and (when it has one) its IPv6 link-local one, which an IPv4-only policy
// would not cover.
func listenerPod(ctx context.Context, t *testing.T, c testCluster, node string) []netTarget {
	t.Helper()
	pods := c.client.CoreV1().Pods(c.namespace)
	script := fmt.Sprintf(`echo "ipv6 $(ip -6 -o addr show dev eth0 scope link | sed -n 's/.* inet6 \([^/]*\)\/.*/\1/p')"; exec nc -ll -p %d -e echo %s`, listenerPort, listenerHello)
	pod := restrictedPod(c, "alfred-netpol-listener-", map[string]string{"alfred.test": "netpol-listener"}, node, script)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the listener Pod: %v", err)
	}
	t.Cleanup(func() {
		_ = pods.Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	var last *corev1.Pod
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != corev1.PodRunning {
			return false, fmt.Errorf("listener Pod ended: %s", p.Status.Phase)
		}
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
	if err != nil {
		t.Fatalf("listener Pod %s did not run: %v\n%s", created.Name, err, describe(last))
	}
	targets := []netTarget{{name: "pod", host: last.Status.PodIP, port: listenerPort, open: true}}
	if v6 := listenerIPv6(ctx, t, c, created.Name); v6 != "" {
		targets = append(targets, netTarget{name: "pod-ipv6", host: v6 + "%eth0", port: listenerPort})
	}
	return targets
}

// restrictedPod is a Pod of the test image that runs script under Pod
// Security "restricted"; on node when it is set (spec.nodeName: no scheduler,
// so no cordon matters).
func restrictedPod(c testCluster, prefix string, labels map[string]string, node, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](agentUID), RunAsGroup: ptr.To[int64](agentUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "main", Image: c.image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", script},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// listenerIPv6 reads the link-local address the listener Pod logged first.
func listenerIPv6(ctx context.Context, t *testing.T, c testCluster, name string) string {
	t.Helper()
	stream, err := c.client.CoreV1().Pods(c.namespace).GetLogs(name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatalf("log of the listener Pod: %v", err)
	}
	defer stream.Close()
	line, err := bufio.NewReader(io.LimitReader(stream, 4096)).ReadString('\n')
	if err != nil {
		t.Fatalf("first log line of the listener Pod: %q: %v", line, err)
	}
	v6, ok := strings.CutPrefix(strings.TrimSpace(line), "ipv6")
	if !ok {
		t.Fatalf("first log line of the listener Pod: %q, want ipv6 ADDRESS", line)
	}
	return strings.TrimSpace(v6)
}

// nodeListener listens on the node's IPv6 link-local address on the Pod
// bridge (nodeListenerIPv4 takes its IPv4 one) and answers listenerHello.
func nodeListener(t *testing.T) netTarget {
	t.Helper()
	bridge := os.Getenv("ALFRED_TEST_K8S_POD_BRIDGE")
	if bridge == "" {
		bridge = defaultPodBridge
	}
	ifc, err := net.InterfaceByName(bridge)
	if err != nil {
		t.Fatalf("the Pod bridge %s of the test cluster (ALFRED_TEST_K8S_POD_BRIDGE): %v", bridge, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatalf("addresses of %s: %v", bridge, err)
	}
	var ip net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsLinkLocalUnicast() && n.IP.To4() == nil {
			ip = n.IP
		}
	}
	if ip == nil {
		t.Fatalf("the Pod bridge %s has no IPv6 link-local address (addresses %v)", bridge, addrs)
	}
	ln, err := net.Listen("tcp6", net.JoinHostPort(ip.String()+"%"+bridge, "0"))
	if err != nil {
		t.Fatalf("listen on the node's bridge address: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go serveHello(ln)
	return netTarget{name: "node", host: ip.String() + "%eth0", port: ln.Addr().(*net.TCPAddr).Port}
}

// serveHello answers listenerHello to each connection to ln until it is closed.
func serveHello(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		fmt.Fprintln(conn, listenerHello)
		conn.Close()
	}
}

// nodeListenerIPv4 listens on the node's IPv4 address on the Pod bridge
// (ALFRED_TEST_K8S_NODE_IP: the Pods' gateway, where the API server
// listens) and answers listenerHello.
func nodeListenerIPv4(t *testing.T) netTarget {
	t.Helper()
	ip := os.Getenv("ALFRED_TEST_K8S_NODE_IP")
	if net.ParseIP(ip).To4() == nil {
		t.Fatalf("ALFRED_TEST_K8S_NODE_IP = %q: want the node's IPv4 address on the Pod bridge (scripts/k8s.sh env)", ip)
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on the node's bridge address %s: %v", ip, err)
	}
	t.Cleanup(func() { ln.Close() })
	go serveHello(ln)
	return netTarget{name: "node-ipv4", host: ip, port: ln.Addr().(*net.TCPAddr).Port, open: true}
}

// apiServerTarget is the API server as a Pod addresses it: the Service
// default/kubernetes, which kube-proxy sends to the node's address on the
// Pod bridge. An unsealed run connects (as the bot's InClusterConfig does).
func apiServerTarget(t *testing.T, c testCluster) netTarget {
	t.Helper()
	svc, err := c.client.CoreV1().Services("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Service default/kubernetes: %v", err)
	}
	if svc.Spec.ClusterIP == "" || len(svc.Spec.Ports) == 0 {
		t.Fatalf("the Service default/kubernetes has no address: %+v", svc.Spec)
	}
	return netTarget{name: "apiserver", host: svc.Spec.ClusterIP, port: int(svc.Spec.Ports[0].Port), connects: true}
}

// gatewaySocket serves the model gateway's part on a unix socket of this
// machine and counts the requests.
func gatewaySocket(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	dir, err := os.MkdirTemp("", "kn") // short: a socket path has 107 bytes at most
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	seen := new(atomic.Int32)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen.Add(1)
		fmt.Fprintf(w, "model answer for %s", req.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, seen
}
