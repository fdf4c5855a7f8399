// Command alfred-forward runs inside a sealed agent container: it listens on
// 127.0.0.1:<port> and carries each TCP connection, byte for byte and both
// ways (half-closes passed on), to the unix socket of the run's model gateway
// (package gateway), which the runner mounts into the container. The agent
// CLI's base URL points at http://127.0.0.1:<port>/<provider>.
//
// It depends on the standard library alone and is built static, so it runs
// in any image:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o alfred-forward ./cmd/alfred-forward
//
// Usage:
//
//	alfred-forward [-port N] [-socket PATH]                 # forward until SIGTERM/SIGINT
//	alfred-forward [-port N] [-socket PATH] -- CMD [ARG...] # forward while CMD runs
//
// With a command, it listens first, then runs CMD with its own stdin, stdout,
// stderr and environment, passes SIGTERM, SIGINT, SIGHUP and SIGQUIT on to
// it, and exits with CMD's status (128+n when signal n ended it); it prints
// nothing of its own unless something fails. Without one it prints
// "alfred-forward: listening on 127.0.0.1:<port>" on stderr once ready.
//
// In a Pod of the kubernetes runner, which has no network, the gateway's
// socket is brought in by a relay the runner starts in the Pod's helper
// container through the API server:
//
//	alfred-forward -relay PATH   # listen on the unix socket PATH, carry each
//	                             # connection over stdin/stdout (internal/tunnel)
//
// The relay writes nothing else on stdout and exits 0 when stdin ends.
//
// -port (or ALFRED_FORWARD_PORT) defaults to 47080; 0 picks a free port.
// -socket (or ALFRED_FORWARD_SOCKET) defaults to /run/alfred/gateway.sock.
// A socket still missing after 10 s (a relay in a Pod may be starting), a
// port in use or a command that cannot start exit 125.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/alchemic-studio/alfred/internal/tunnel"
)

const (
	defaultPort   = 47080 // gateway.DefaultForwardPort
	defaultSocket = "/run/alfred/gateway.sock"
	exitSetup     = 125
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("alfred-forward", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", envInt("ALFRED_FORWARD_PORT", defaultPort), "port to listen on at 127.0.0.1 (0: any free port); env ALFRED_FORWARD_PORT")
	socket := fs.String("socket", envStr("ALFRED_FORWARD_SOCKET", defaultSocket), "unix socket of the model gateway; env ALFRED_FORWARD_SOCKET")
	relay := fs.String("relay", "", "listen on this unix socket and carry its connections over stdin and stdout (the kubernetes runner's tunnel)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *relay != "" {
		return relayOn(*relay, os.Stdin, os.Stdout, stderr)
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(stderr, "alfred-forward: -port %d: want 0..65535\n", *port)
		return 2
	}
	if fi, err := awaitSocket(*socket, socketWait); err != nil || fi.Mode()&os.ModeSocket == 0 {
		fmt.Fprintf(stderr, "alfred-forward: %s is not the gateway's socket (is it mounted?): %v\n", *socket, orMode(err, fi))
		return exitSetup
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(stderr, "alfred-forward: %v\n", err)
		return exitSetup
	}
	defer ln.Close()
	go serve(ln, *socket, stderr)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		fmt.Fprintf(stderr, "alfred-forward: listening on %s, forwarding to %s\n", ln.Addr(), *socket)
		<-sigs
		return 0
	}
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "alfred-forward: %v\n", err)
		return exitSetup
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	default:
		fmt.Fprintf(stderr, "alfred-forward: %v\n", err)
		return exitSetup
	}
}

// socketWait is how long the forwarder waits for a socket that is not there
// yet: in a Pod, the relay that makes it starts beside the agent.
const socketWait = 10 * time.Second

// awaitSocket stats path until it exists, at most for d.
func awaitSocket(path string, d time.Duration) (os.FileInfo, error) {
	deadline := time.Now().Add(d)
	for {
		fi, err := os.Stat(path)
		if err == nil || !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return fi, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func orMode(err error, fi os.FileInfo) any {
	if err != nil {
		return err
	}
	return "mode " + fi.Mode().String()
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// serve accepts until the listener closes.
func serve(ln net.Listener, socket string, stderr io.Writer) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and go on.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		go forward(c, socket, stderr)
	}
}

// lingerFor is how long one direction of a connection may go on after the
// other failed.
const lingerFor = 2 * time.Second

// forward carries one connection to the socket. When the socket cannot be
// reached, the client gets an HTTP 502 saying so.
func forward(c net.Conn, socket string, stderr io.Writer) {
	u, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Fprintf(stderr, "alfred-forward: %v\n", err)
		// Answer once the client has spoken (an HTTP client that reads an
		// answer before it sent its request takes it for a broken connection).
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = c.Read(make([]byte, 4096))
		_ = c.SetDeadline(time.Time{})
		msg := "alfred-forward: the model gateway is unreachable: " + err.Error() + "\n"
		_, _ = fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
		_ = c.Close()
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	pipe(c, u)
}

// pipe copies both ways. The end of one direction (EOF) is passed on as a
// half-close, and the other direction goes on. An error in one direction
// (the server closed after answering while the client still sends) leaves
// the other lingerFor to deliver what it carries (the answer) before both
// ends close: closing at once would drop an answer not yet passed on. Both
// ends are closed when both directions are done.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = a.Close()
			_ = b.Close()
		})
	}
	linger := func() {
		at := time.Now().Add(lingerFor)
		_ = a.SetDeadline(at)
		_ = b.SetDeadline(at)
	}
	half := func(dst, src net.Conn) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			linger()
			// What src still sends goes nowhere; read it, so that closing
			// src does not reset the connection under an answer in flight.
			_, _ = io.Copy(io.Discard, src)
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			if cw.CloseWrite() == nil {
				return
			}
		}
		linger()
	}
	wg.Add(2)
	go half(b, a)
	go half(a, b)
	wg.Wait()
	closeBoth()
}

// relayOn listens on the unix socket path (a stale socket file is replaced)
// and carries its connections over r and w until r ends.
func relayOn(path string, r io.Reader, w io.Writer, stderr io.Writer) int {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintf(stderr, "alfred-forward: relay: %v\n", err)
		return exitSetup
	}
	if err := tunnel.Serve(ln, r, w); err != nil {
		fmt.Fprintf(stderr, "alfred-forward: relay: %v\n", err)
		return 1
	}
	return 0
}
