package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// exec runs command in a container of Pod pod through the API server
// (WebSocket, else SPDY), feeding it stdin and copying its stdout. A failure
// includes the end of its stderr.
func (r *Runner) exec(ctx context.Context, pod, container string, command []string, stdin io.Reader, stdout io.Writer) error {
	return r.execIO(ctx, pod, container, command, stdin, stdout, nil)
}

// execIO is exec; when stderr is not nil, it makes the writer the exec's
// stderr goes to from the one that keeps its end for a failure's message.
func (r *Runner) execIO(ctx context.Context, pod, container string, command []string, stdin io.Reader, stdout io.Writer, stderr func(msg io.Writer) io.Writer) error {
	req := r.client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(r.namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   command,
			Stdin:     stdin != nil,
			Stdout:    stdout != nil,
			Stderr:    true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(r.config, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("kube: exec in %s/%s: %w", pod, container, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.config, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("kube: exec in %s/%s: %w", pod, container, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("kube: exec in %s/%s: %w", pod, container, err)
	}
	var msg tailBuffer
	errW := io.Writer(&msg)
	if stderr != nil {
		errW = stderr(&msg)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: errW})
	if err != nil {
		if msg := strings.TrimSpace(msg.String()); msg != "" {
			return fmt.Errorf("kube: %s in %s/%s: %w: %s", command[0], pod, container, err, msg)
		}
		return fmt.Errorf("kube: %s in %s/%s: %w", command[0], pod, container, err)
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ buf bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - 4096; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.buf.String() }

// others is a shell function listing the processes of the Pod outside the
// calling container's cgroup, other than the pause process (PID 1): the
// agent and whatever it started. The process namespace is shared, so the
// helper sees them.
const others = `me=$(cat /proc/self/cgroup)
others() {
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = 1 ] && continue
    c=$(cat "$d/cgroup" 2>/dev/null) || continue
    [ "$c" = "$me" ] || echo "$pid"
  done
}
`

// killScript, run in the helper as `sh -c killScript kill SIGNAL`, sends
// SIGNAL to the agent's processes. Before a KILL they are all stopped, so
// that none sees another die first (a shell would report it on stderr).
const killScript = others + `s=$1
set -- $(others)
if [ "$s" = KILL ]; then for pid; do kill -s STOP "$pid" 2>/dev/null; done; fi
for pid; do kill -s "$s" "$pid" 2>/dev/null; done
exit 0`

// signal sends sig (TERM or KILL) to the agent's processes.
func (r *Runner) signal(ctx context.Context, pod, sig string) error {
	return r.exec(ctx, pod, ctrHelper, []string{"/bin/sh", "-c", killScript, "kill", sig}, nil, nil)
}
