package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"sync"
)

// maxMeterJSON bounds the plain JSON answer the meter keeps to read usage
// from at its end (the bytes pass through regardless), and the longest SSE
// line it reads (a Responses response.completed event carries the whole
// answer).
const maxMeterJSON = 16 << 20

// meter passes an answer through untouched while reading its token usage:
// an SSE stream line by line as it comes, any other answer as JSON at its
// end. done gets the counts once, at EOF or Close (a stream cut short
// counts what it had said).
type meter struct {
	rc   io.ReadCloser
	sse  bool
	buf  []byte // SSE: the partial line; JSON: the body so far
	skip bool   // SSE: the current line is too long, drop it
	over bool   // JSON: the body is too long to read
	u    tally
	once sync.Once
	done func(in, out int64)
}

func newMeter(rc io.ReadCloser, contentType string, done func(in, out int64)) *meter {
	mt, _, _ := mime.ParseMediaType(contentType)
	return &meter{rc: rc, sse: mt == "text/event-stream", done: done}
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.rc.Read(p)
	if n > 0 {
		m.feed(p[:n])
	}
	if err == io.EOF {
		m.finish()
	}
	return n, err
}

func (m *meter) Close() error {
	m.finish()
	return m.rc.Close()
}

func (m *meter) feed(b []byte) {
	if !m.sse {
		if m.over {
			return
		}
		if len(m.buf)+len(b) > maxMeterJSON {
			m.over, m.buf = true, nil
			return
		}
		m.buf = append(m.buf, b...)
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !m.skip {
				if len(m.buf)+len(b) > maxMeterJSON {
					m.skip, m.buf = true, m.buf[:0]
				} else {
					m.buf = append(m.buf, b...)
				}
			}
			return
		}
		if !m.skip {
			line := b[:i]
			if len(m.buf) > 0 {
				m.buf = append(m.buf, line...)
				line = m.buf
			}
			m.line(line)
		}
		m.buf, m.skip = m.buf[:0], false
		b = b[i+1:]
	}
}

// line reads one SSE line: only data lines carry usage.
func (m *meter) line(l []byte) {
	l = bytes.TrimRight(l, "\r")
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return // [DONE] and the like
	}
	m.u.object(data)
}

func (m *meter) finish() {
	m.once.Do(func() {
		if !m.sse && !m.over {
			body := bytes.TrimSpace(m.buf)
			switch {
			case len(body) > 0 && body[0] == '{':
				m.u.object(body)
			case len(body) > 0 && body[0] == '[': // Gemini's streamGenerateContent without alt=sse
				var items []json.RawMessage
				if json.Unmarshal(body, &items) == nil {
					for _, it := range items {
						m.u.object(it)
					}
				}
			}
		}
		m.buf = nil
		in, out := m.u.totals()
		m.done(in, out)
	})
}

// tally keeps the latest value of each usage field seen in one answer: a
// stream repeats or grows its counts (Anthropic's message_delta carries the
// cumulative output tokens, Gemini's chunks cumulative usageMetadata,
// OpenAI's final chunk or response.completed the whole usage), so the last
// one said is the answer's.
type tally struct {
	f [nFields]int64
}

const (
	fInput          = iota // input_tokens (Anthropic, Responses)
	fCacheCreation         // cache_creation_input_tokens (Anthropic)
	fCacheRead             // cache_read_input_tokens (Anthropic)
	fOutput                // output_tokens (Anthropic, Responses)
	fPrompt                // prompt_tokens (chat completions)
	fCompletion            // completion_tokens (chat completions)
	fGeminiPrompt          // promptTokenCount
	fGeminiCands           // candidatesTokenCount
	fGeminiThoughts        // thoughtsTokenCount
	nFields
)

type usageFields struct {
	InputTokens   *int64 `json:"input_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	Prompt        *int64 `json:"prompt_tokens"`
	Completion    *int64 `json:"completion_tokens"`
}

type geminiUsage struct {
	Prompt     *int64 `json:"promptTokenCount"`
	Candidates *int64 `json:"candidatesTokenCount"`
	Thoughts   *int64 `json:"thoughtsTokenCount"`
}

// probe is where usage sits in the answers and events of each API.
type probe struct {
	Usage   *usageFields `json:"usage"` // Anthropic message, message_delta; chat; Responses
	Message *struct {
		Usage *usageFields `json:"usage"`
	} `json:"message"` // Anthropic message_start
	Response *struct {
		Usage *usageFields `json:"usage"`
	} `json:"response"` // Responses events (response.completed)
	UsageMetadata *geminiUsage `json:"usageMetadata"` // Gemini
}

// object reads the usage of one JSON object, if it has any.
func (t *tally) object(b []byte) {
	if !bytes.Contains(b, []byte("sage")) { // "usage", "usageMetadata": skip the bulk of a stream cheaply
		return
	}
	var p probe
	if json.Unmarshal(b, &p) != nil {
		return
	}
	t.fields(p.Usage)
	if p.Message != nil {
		t.fields(p.Message.Usage)
	}
	if p.Response != nil {
		t.fields(p.Response.Usage)
	}
	if g := p.UsageMetadata; g != nil {
		t.set(fGeminiPrompt, g.Prompt)
		t.set(fGeminiCands, g.Candidates)
		t.set(fGeminiThoughts, g.Thoughts)
	}
}

func (t *tally) fields(u *usageFields) {
	if u == nil {
		return
	}
	t.set(fInput, u.InputTokens)
	t.set(fCacheCreation, u.CacheCreation)
	t.set(fCacheRead, u.CacheRead)
	t.set(fOutput, u.OutputTokens)
	t.set(fPrompt, u.Prompt)
	t.set(fCompletion, u.Completion)
}

func (t *tally) set(i int, v *int64) {
	if v != nil {
		t.f[i] = *v
	}
}

// totals are the answer's input and output tokens. Each answer speaks one
// API, so summing the fields of all of them adds only that API's.
func (t *tally) totals() (in, out int64) {
	in = t.f[fInput] + t.f[fCacheCreation] + t.f[fCacheRead] + t.f[fPrompt] + t.f[fGeminiPrompt]
	out = t.f[fOutput] + t.f[fCompletion] + t.f[fGeminiCands] + t.f[fGeminiThoughts]
	return in, out
}
