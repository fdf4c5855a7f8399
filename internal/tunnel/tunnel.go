// Package tunnel carries stream connections over one byte stream, both ways:
// the stdin and stdout of a process the kubernetes runner starts in a run's
// Pod through the API server (exec). It is how a Pod with no network at all
// reaches the model gateway's unix socket on the bot's side: in the Pod,
// `alfred-forward -relay SOCKET` listens on the socket path the forwarder
// expects and opens a stream per connection (Serve); in the bot, Dial
// connects each stream to the gateway's socket.
//
// Frames are a type byte, a stream id and a payload length (both big-endian
// uint32), then the payload (at most 32 KiB): open (from the listening end),
// data, eof (the sender writes no more on the stream: a half-close, passed
// on with CloseWrite) and close (the stream is over). A stream ends when both
// of its halves did, or at once on close. The end of the byte stream ends
// every stream. Data for one stream is written to its connection in the
// reading goroutine, so a connection that does not read holds up the others:
// both ends are local sockets, which read at once.
//
// It depends on the standard library alone, since alfred-forward does.
package tunnel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Frame types.
const (
	frameOpen  byte = 1
	frameData  byte = 2
	frameEOF   byte = 3
	frameClose byte = 4
)

// maxPayload bounds a data frame.
const maxPayload = 32 << 10

const headerSize = 9

// mux is one end of a tunnel: the streams it carries and the writer they share.
type mux struct {
	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	streams map[uint32]*stream
	next    uint32
	done    bool
}

// stream is one connection carried by the tunnel.
type stream struct {
	id   uint32
	conn net.Conn

	mu              sync.Mutex
	sentEOF, gotEOF bool
	closed          bool
}

func newMux(w io.Writer) *mux { return &mux{w: w, streams: map[uint32]*stream{}} }

// send writes one frame; frames of different streams never interleave.
func (m *mux) send(kind byte, id uint32, payload []byte) error {
	var h [headerSize]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:5], id)
	binary.BigEndian.PutUint32(h[5:9], uint32(len(payload)))
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if _, err := m.w.Write(h[:]); err != nil {
		return err
	}
	if len(payload) > 0 {
		if _, err := m.w.Write(payload); err != nil {
			return err
		}
	}
	return nil
}

// add registers conn as a stream under id (0: the next free id).
func (m *mux) add(id uint32, conn net.Conn) (*stream, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil, false
	}
	if id == 0 {
		m.next++
		id = m.next
	}
	s := &stream{id: id, conn: conn}
	m.streams[id] = s
	return s, true
}

func (m *mux) get(id uint32) *stream {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.streams[id]
}

// end closes the stream's connection and forgets it; tell sends close to
// the other end.
func (m *mux) end(s *stream, tell bool) {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return
	}
	_ = s.conn.Close()
	m.mu.Lock()
	delete(m.streams, s.id)
	m.mu.Unlock()
	if tell {
		_ = m.send(frameClose, s.id, nil)
	}
}

// shutdown ends every stream: the byte stream is over.
func (m *mux) shutdown() {
	m.mu.Lock()
	m.done = true
	list := make([]*stream, 0, len(m.streams))
	for _, s := range m.streams {
		list = append(list, s)
	}
	m.mu.Unlock()
	for _, s := range list {
		m.end(s, false)
	}
}

// pump carries what the connection reads to the other end, then a
// half-close (or a close, when reading failed).
func (m *mux) pump(s *stream) {
	buf := make([]byte, maxPayload)
	for {
		n, err := s.conn.Read(buf)
		if n > 0 {
			if werr := m.send(frameData, s.id, buf[:n]); werr != nil {
				m.end(s, false)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			m.halfDone(s, true)
			return
		}
		if err != nil {
			m.end(s, true)
			return
		}
	}
}

// halfDone notes that one half of the stream is over (sent: ours, else the
// other end's) and ends the stream when both are.
func (m *mux) halfDone(s *stream, sent bool) {
	s.mu.Lock()
	if sent {
		s.sentEOF = true
	} else {
		s.gotEOF = true
	}
	both := s.sentEOF && s.gotEOF
	s.mu.Unlock()
	if sent {
		_ = m.send(frameEOF, s.id, nil)
	} else if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	if both {
		m.end(s, false)
	}
}

// read handles the frames of r until it ends; open is called for each open
// frame (nil: open frames are a protocol error).
func (m *mux) read(r io.Reader, open func(id uint32)) error {
	br := bufio.NewReaderSize(r, maxPayload+headerSize)
	var h [headerSize]byte
	buf := make([]byte, maxPayload)
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("tunnel: read frame: %w", err)
		}
		id, n := binary.BigEndian.Uint32(h[1:5]), binary.BigEndian.Uint32(h[5:9])
		if n > maxPayload {
			return fmt.Errorf("tunnel: frame of %d bytes (at most %d)", n, maxPayload)
		}
		if _, err := io.ReadFull(br, buf[:n]); err != nil {
			return fmt.Errorf("tunnel: read payload: %w", err)
		}
		if err := m.handle(h[0], id, buf[:n], open); err != nil {
			return err
		}
	}
}

// handle acts on one frame. Frames of a stream already over are dropped.
func (m *mux) handle(kind byte, id uint32, payload []byte, open func(id uint32)) error {
	if kind == frameOpen {
		if open == nil {
			return fmt.Errorf("tunnel: open frame from the listening end")
		}
		open(id)
		return nil
	}
	s := m.get(id)
	switch {
	case kind < frameOpen || kind > frameClose:
		return fmt.Errorf("tunnel: unknown frame type %d", kind)
	case s == nil:
		return nil
	case kind == frameData:
		if _, err := s.conn.Write(payload); err != nil {
			m.end(s, true)
		}
	case kind == frameEOF:
		m.halfDone(s, false)
	case kind == frameClose:
		m.end(s, false)
	}
	return nil
}

// Serve accepts connections on ln and carries each over the byte stream (r
// from the other end, w to it) until r ends; then it closes ln and every
// connection. It returns nil when r ended cleanly.
func Serve(ln net.Listener, r io.Reader, w io.Writer) error {
	m := newMux(w)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, ok := m.add(0, c)
			if !ok {
				_ = c.Close()
				return
			}
			if err := m.send(frameOpen, s.id, nil); err != nil {
				m.end(s, false)
				continue
			}
			go m.pump(s)
		}
	}()
	err := m.read(r, nil)
	_ = ln.Close()
	m.shutdown()
	return err
}

// Dial carries each stream the other end opens over the byte stream (r from
// it, w to it) to a connection of its own, made by dial, until r ends; a
// stream whose dial fails is closed at once. It returns nil when r ended
// cleanly.
func Dial(r io.Reader, w io.Writer, dial func() (net.Conn, error)) error {
	m := newMux(w)
	err := m.read(r, func(id uint32) {
		c, derr := dial()
		if derr != nil {
			_ = m.send(frameClose, id, nil)
			return
		}
		s, ok := m.add(id, c)
		if !ok {
			_ = c.Close()
			return
		}
		go m.pump(s)
	})
	m.shutdown()
	return err
}
