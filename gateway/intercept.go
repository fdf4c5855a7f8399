package gateway

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ContainerCA is where the runner mounts the gateway's certificate
// authority (Session.CAPath) in a sealed container whose CLI reaches an
// intercepted provider, read-only.
const ContainerCA = "/run/alfred/gateway-ca.pem"

// caFile is the name of the authority's certificate in a session's folder.
const caFile = "gateway-ca.pem"

// intercept answers a CONNECT to a host of an intercepted provider (p is
// that host's): with the run's token (Proxy-Authorization, as the CLI
// takes it from its HTTPS_PROXY), it says the connection is established,
// terminates TLS with the gateway's certificate for the host, and serves
// the requests inside as that provider's (interceptedRequest) until the
// CLI hangs up or the session closes.
func (s *Session) intercept(w http.ResponseWriter, r *http.Request, p *provider) {
	if !s.authorized(r) {
		s.unauthorized(w, r, true)
		return
	}
	cert, err := s.g.ca.leaf(p.shown)
	if err != nil {
		s.log.Error("gateway: intercept", "host", p.shown, "error", err)
		writeError(w, http.StatusInternalServerError, "api_error", "alfred gateway: no certificate for "+p.shown)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "api_error", "alfred gateway: cannot intercept: "+err.Error())
		return
	}
	if !s.track(conn, true) {
		_ = conn.Close()
		return
	}
	defer s.track(conn, false)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		_ = conn.Close()
		return
	}
	var client net.Conn = conn
	if n := brw.Reader.Buffered(); n > 0 {
		pending, _ := brw.Reader.Peek(n)
		client = &prefixedConn{Conn: conn, r: io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn)}
	}
	// The certificate is the CONNECT's host's whatever name the client
	// asks for: nothing else is signed on this connection.
	tc := tls.Server(client, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	s.log.Debug("gateway: intercepting", "host", p.shown, "provider", p.Name)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.interceptedRequest(w, r, p) }),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.g.log.Handler(), slog.LevelDebug),
	}
	_ = srv.Serve(newOneConn(tc)) // returns when the connection ends
}

// interceptedRequest serves one request inside an intercepted connection
// as a request to p: the run's token checked (401 without it), then as a
// request to a provider by its base URL (endpoints, budget, key, meter).
func (s *Session) interceptedRequest(w http.ResponseWriter, r *http.Request, p *provider) {
	s.touch()
	s.busy.Add(1)
	defer func() {
		s.touch()
		s.busy.Add(-1)
	}()
	if !s.authorized(r) {
		s.unauthorized(w, r, false)
		return
	}
	if r.Header.Get("Upgrade") != "" || r.Method == http.MethodConnect {
		s.refuseEndpoint(w, r, p, r.URL.EscapedPath(), r.URL.EscapedPath(), "a connection upgrade or tunnel inside an intercepted connection: it could not be metered")
		return
	}
	escaped := r.URL.EscapedPath()
	s.provider(w, r, p, escaped, "https://"+p.shown+escaped)
}

// prefixedConn reads what the server had buffered before the connection's own bytes.
type prefixedConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConn is a listener that accepts one connection, then waits for it to
// close and reports the listener closed: http.Server.Serve on one
// connection.
type oneConn struct {
	mu     sync.Mutex
	conn   net.Conn
	closed chan struct{}
	once   sync.Once
}

func newOneConn(c net.Conn) *oneConn {
	o := &oneConn{closed: make(chan struct{})}
	o.conn = &closeNotify{Conn: c, o: o}
	return o
}

func (o *oneConn) Accept() (net.Conn, error) {
	o.mu.Lock()
	c := o.conn
	o.conn = nil
	o.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-o.closed
	return nil, net.ErrClosed
}

func (o *oneConn) Close() error {
	o.once.Do(func() { close(o.closed) })
	return nil
}

func (o *oneConn) Addr() net.Addr { return &net.UnixAddr{Name: "intercepted", Net: "unix"} }

// closeNotify closes its listener when it is closed.
type closeNotify struct {
	net.Conn
	o *oneConn
}

func (c *closeNotify) Close() error {
	err := c.Conn.Close()
	_ = c.o.Close()
	return err
}
