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
// or JSON Lines line it reads (a Responses response.completed event carries
// the whole answer).
const maxMeterJSON = 16 << 20

// How the meter reads an answer.
type meterMode int

const (
	modeJSON  meterMode = iota // one JSON value (or several, concatenated) at its end
	modeSSE                    // server-sent events, line by line: one answer streamed
	modeLines                  // JSON Lines, line by line: one answer a line (batch results)
)

// jsonLinesTypes are the media types of JSON Lines (newline-delimited JSON).
var jsonLinesTypes = map[string]bool{
	"application/jsonl": true, "application/x-jsonl": true, "application/jsonlines": true,
	"application/x-jsonlines": true, "application/x-ndjson": true, "application/ndjson": true,
}

// meter passes an answer through untouched while reading its token usage:
// an SSE stream or JSON Lines line by line as they come, any other answer
// as JSON at its end (its last byte, when its length is known, else EOF).
// add gets what each part adds, before the part's bytes go on to the
// agent, so an agent that has its answer can never ask again before the
// answer is counted (the budget reads the counts); done gets the answer's
// counts once, at EOF or Close (a stream cut short counts what it had said).
type meter struct {
	rc     io.ReadCloser
	mode   meterMode
	buf    []byte // SSE, lines: the partial line; JSON: the body so far
	skip   bool   // SSE, lines: the current line is too long, drop it
	over   bool   // JSON: the body is too long to read
	size   int64  // JSON: the body's length, -1 unknown
	read   int64  // JSON: the bytes read so far
	parsed bool   // JSON: the body was read for usage
	u      tally  // the answer's usage (SSE, one JSON answer)
	sum    [2]int64
	told   [2]int64 // what add was given so far
	once   sync.Once
	add    func(in, out int64)
	done   func(in, out int64)
}

// newMeter meters rc, an answer of contentType and size bytes (-1:
// unknown); add and done are called as the meter says.
func newMeter(rc io.ReadCloser, contentType string, size int64, add, done func(in, out int64)) *meter {
	mt, _, _ := mime.ParseMediaType(contentType)
	mode := modeJSON
	switch {
	case mt == "text/event-stream":
		mode = modeSSE
	case jsonLinesTypes[mt]:
		mode = modeLines
	}
	return &meter{rc: rc, mode: mode, size: size, add: add, done: done}
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
	if m.mode == modeJSON {
		m.read += int64(len(b))
		if m.over {
			return
		}
		if len(m.buf)+len(b) > maxMeterJSON {
			m.over, m.buf = true, nil
			return
		}
		m.buf = append(m.buf, b...)
		if m.size >= 0 && m.read >= m.size {
			m.parseBody()
		}
		return
	}
	defer m.tell()
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

// line reads one line: of SSE, only data lines carry usage; of JSON Lines,
// each line is an answer of its own.
func (m *meter) line(l []byte) {
	l = bytes.TrimRight(l, "\r")
	if m.mode == modeLines {
		m.answer(bytes.TrimSpace(l))
		return
	}
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

// answer adds the usage of one whole answer (a JSON object) to the sum.
func (m *meter) answer(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var t tally
	t.object(b)
	in, out := t.totals()
	m.sum[0] += in
	m.sum[1] += out
}

// parseBody reads the whole JSON answer for its usage, once.
func (m *meter) parseBody() {
	if m.parsed || m.over {
		return
	}
	m.parsed = true
	m.body(bytes.TrimSpace(m.buf))
	m.buf = nil
	m.tell()
}

// totals are the answer's counts so far.
func (m *meter) totals() (in, out int64) {
	in, out = m.u.totals()
	return in + m.sum[0], out + m.sum[1]
}

// tell gives add what the counts grew by since it last did.
func (m *meter) tell() {
	in, out := m.totals()
	if d0, d1 := in-m.told[0], out-m.told[1]; d0 != 0 || d1 != 0 {
		m.told = [2]int64{in, out}
		m.add(d0, d1)
	}
}

func (m *meter) finish() {
	m.once.Do(func() {
		switch {
		case m.mode == modeJSON:
			m.parseBody()
		case m.mode == modeLines && !m.skip && len(m.buf) > 0:
			m.line(m.buf) // a last line without its newline
		}
		m.buf = nil
		m.tell()
		m.done(m.totals())
	})
}

// body reads a whole JSON answer: one object; an array of the chunks of one
// answer (Gemini's streamGenerateContent without alt=sse); or several
// objects one after the other, each an answer of its own (JSON Lines served
// as another type, such as a batch's output file).
func (m *meter) body(body []byte) {
	if len(body) == 0 || !bytes.Contains(body, []byte("sage")) {
		return
	}
	switch {
	case body[0] == '{' && json.Valid(body):
		m.u.object(body)
	case body[0] == '{':
		dec := json.NewDecoder(bytes.NewReader(body))
		for {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return
			}
			m.answer(v)
		}
	case body[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(body, &items) == nil {
			for _, it := range items {
				m.u.object(it)
			}
		}
	}
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

// probe is where usage sits in the answers and events of each API, and in
// the lines of their batch results.
type probe struct {
	Usage   *usageFields `json:"usage"` // Anthropic message, message_delta; chat; Responses
	Message *struct {
		Usage *usageFields `json:"usage"`
	} `json:"message"` // Anthropic message_start
	Response *struct {
		Usage *usageFields `json:"usage"` // Responses events (response.completed)
		Body  *struct {
			Usage *usageFields `json:"usage"`
		} `json:"body"` // an OpenAI batch output line
		UsageMetadata *geminiUsage `json:"usageMetadata"` // a Gemini batch output line
	} `json:"response"`
	Result *struct {
		Message *struct {
			Usage *usageFields `json:"usage"`
		} `json:"message"`
	} `json:"result"` // an Anthropic batch results line
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
	if r := p.Response; r != nil {
		t.fields(r.Usage)
		if r.Body != nil {
			t.fields(r.Body.Usage)
		}
		t.gemini(r.UsageMetadata)
	}
	if p.Result != nil && p.Result.Message != nil {
		t.fields(p.Result.Message.Usage)
	}
	t.gemini(p.UsageMetadata)
}

func (t *tally) gemini(g *geminiUsage) {
	if g == nil {
		return
	}
	t.set(fGeminiPrompt, g.Prompt)
	t.set(fGeminiCands, g.Candidates)
	t.set(fGeminiThoughts, g.Thoughts)
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
