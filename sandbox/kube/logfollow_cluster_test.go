package kube

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// logCutter cuts the body of the first cuts log streams after `after`
// bytes, ending it with err (io.EOF: as if the stream had ended).
type logCutter struct {
	rt      http.RoundTripper
	after   int
	err     error
	cuts    atomic.Int32
	streams atomic.Int32
}

func (c *logCutter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/log") {
		return resp, err
	}
	c.streams.Add(1)
	if c.cuts.Add(-1) >= 0 {
		resp.Body = &cutBody{rc: resp.Body, left: c.after, err: c.err}
	}
	return resp, nil
}

type cutBody struct {
	rc   io.ReadCloser
	left int
	err  error
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.rc.Close()
		return 0, b.err
	}
	n, err := b.rc.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

// TestRunnerLogSurvivesBrokenStreams cuts the agent's log stream twice in
// the middle of a run that prints a numbered sequence for four seconds: the
// runner reconnects and the output is whole, in order and undoubled, whether
// the cut looks like an end (EOF) or a broken connection.
func TestRunnerLogSurvivesBrokenStreams(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"ended early", io.EOF},
		{"broken", io.ErrUnexpectedEOF},
	}
	var want strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRunner(t)
			cutter := &logCutter{after: 150, err: tt.err}
			cutter.cuts.Store(2)
			config := rest.CopyConfig(r.config)
			config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { cutter.rt = rt; return cutter }
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				t.Fatal(err)
			}
			r.client = client
			res := r.run(t, r.spec(`i=1; while [ $i -le 40 ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done`))
			if got := string(res.Stdout); got != want.String() {
				t.Errorf("stdout after two cut streams:\n%s\nwant:\n%s", got, want.String())
			}
			if n := cutter.streams.Load(); n < 3 {
				t.Errorf("%d log streams opened, want at least 3 (two were cut)", n)
			}
		})
	}
}
