package fakeforge

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
)

// Sender delivers webhooks one at a time, in the order they were queued,
// from a goroutine of its own, and records each delivery as a D (the fake's
// Delivery). Its zero value is ready to use.
type Sender[D any] struct {
	mu         sync.Mutex
	queue      []*Pending[D]
	running    bool
	idle       *sync.Cond
	deliveries []D
}

// Pending is a queued delivery.
type Pending[D any] struct {
	d    D
	send func(D) D
	done chan D
}

// cond is the sender's condition, made on first use; callers hold s.mu.
func (s *Sender[D]) cond() *sync.Cond {
	if s.idle == nil {
		s.idle = sync.NewCond(&s.mu)
	}
	return s.idle
}

// Queue queues the delivery d, which send makes: it sends d's webhook and
// returns d with what the endpoint answered. Deliveries go out in the order
// they are queued.
func (s *Sender[D]) Queue(d D, send func(D) D) *Pending[D] {
	p := &Pending[D]{d: d, send: send, done: make(chan D, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, p)
	if !s.running {
		s.running = true
		go s.deliverLoop()
	}
	return p
}

func (s *Sender[D]) deliverLoop() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.cond().Broadcast()
			s.mu.Unlock()
			return
		}
		p := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()

		d := p.send(p.d)
		s.mu.Lock()
		s.deliveries = append(s.deliveries, d)
		s.mu.Unlock()
		p.done <- d
	}
}

// Wait waits for p's delivery and returns it; the zero D when p is nil (no
// webhook was queued).
func (p *Pending[D]) Wait() D {
	if p == nil {
		var zero D
		return zero
	}
	return <-p.done
}

// Deliveries lists the deliveries made so far, in order.
func (s *Sender[D]) Deliveries() []D {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]D(nil), s.deliveries...)
}

// Flush waits until every queued delivery has been made.
func (s *Sender[D]) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.running || len(s.queue) > 0 {
		s.cond().Wait()
	}
}

// Post sends a JSON webhook body to url with header (Content-Type is set to
// application/json) and returns the HTTP status answered, 0 with the error
// on a transport error.
func Post(client *http.Client, url string, header http.Header, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// NewUUID is a random (version 4) UUID.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Recorded is a fresh copy of the JSON object recorded in recordings/file
// of fsys; it panics, naming pkg, when there is none.
func Recorded(fsys fs.FS, pkg, file string) map[string]any {
	data, err := fs.ReadFile(fsys, "recordings/"+file)
	if err != nil {
		panic(fmt.Sprintf("%s: recording %s: %v", pkg, file, err))
	}
	var o map[string]any
	if err := json.Unmarshal(data, &o); err != nil {
		panic(fmt.Sprintf("%s: recording %s: %v", pkg, file, err))
	}
	return o
}
