package state

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// A cold open decodes every record, and encoding/json's reflection and
// validation pass were most of its time. jdec decodes the JSON the store
// writes for its typed records directly into their structs. It is strict:
// on anything it does not expect (a key it does not know or not spelled as
// its tag, a string that is not valid UTF-8, a number that is not a plain
// integer where one is due, nesting beyond a limit...) it gives up and
// decodeRecord falls back to encoding/json, so that a record it accepts
// decodes exactly as encoding/json would decode it (FuzzFastDecode checks).
type jdec struct {
	b      []byte
	i      int
	bad    bool
	key    []byte
	intern *interner
}

// interner shares the strings records repeat (forges, owners, projects,
// statuses, models...) between the records of one Open. A small cache of
// recent strings, by length and last byte, answers most lookups before the
// map.
type interner struct {
	recent [64]string
	m      map[string]string
}

func newInterner() *interner { return &interner{m: make(map[string]string, 4096)} }

func (in *interner) get(b []byte) string {
	if in == nil || len(b) > 64 || len(b) == 0 {
		return string(b)
	}
	slot := &in.recent[(len(b)*7+int(b[len(b)-1]))&63]
	if *slot == string(b) {
		return *slot
	}
	s, ok := in.m[string(b)]
	if !ok {
		s = string(b)
		if len(in.m) < 1<<16 {
			in.m[s] = s
		}
	}
	*slot = s
	return s
}

func (d *jdec) fail() { d.bad = true }

func (d *jdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (d *jdec) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// open starts an object.
func (d *jdec) open() bool {
	if d.peek() != '{' {
		d.fail()
		return false
	}
	d.i++
	return true
}

// next reads the next key of an object into d.key, or reports false at its
// end (or on an error, with d.bad set).
func (d *jdec) next(first bool) bool {
	c := d.peek()
	if c == '}' {
		d.i++
		return false
	}
	if !first {
		if c != ',' {
			d.fail()
			return false
		}
		d.i++
		c = d.peek()
	}
	if c != '"' {
		d.fail()
		return false
	}
	raw, ok := d.rawString()
	if !ok || d.peek() != ':' {
		d.fail()
		return false
	}
	d.i++
	d.key = raw
	return true
}

// rawString reads a string without escapes (a key, or the fast case of a
// value) and returns its bytes; it gives up on escapes and invalid UTF-8.
func (d *jdec) rawString() ([]byte, bool) {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		switch {
		case c == '"':
			s := d.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			d.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string value, escapes included.
func (d *jdec) str() string {
	b, ok := d.strBytes()
	if !ok {
		return ""
	}
	return string(b)
}

// istr reads a string value and interns it.
func (d *jdec) istr() string {
	b, ok := d.strBytes()
	if !ok {
		return ""
	}
	return d.intern.get(b)
}

func (d *jdec) strBytes() ([]byte, bool) {
	if d.peek() != '"' {
		d.fail()
		return nil, false
	}
	if raw, ok := d.rawString(); ok {
		return raw, true
	}
	out, ok := d.unescape()
	if !ok {
		d.fail()
	}
	return out, ok
}

// unescape reads a string holding escapes.
func (d *jdec) unescape() ([]byte, bool) {
	out := make([]byte, 0, 64)
	j := d.i + 1
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return nil, false
			}
			d.i = j + 1
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			return nil, false
		}
		var ok bool
		if out, j, ok = d.escape(out, j+1); !ok {
			return nil, false
		}
	}
	return nil, false
}

// escape appends the character escaped at d.b[j:] (after the backslash)
// and returns where the string goes on.
func (d *jdec) escape(out []byte, j int) ([]byte, int, bool) {
	switch c := d.b[j]; c {
	case '"', '\\', '/':
		return append(out, c), j + 1, true
	case 'b':
		return append(out, '\b'), j + 1, true
	case 'f':
		return append(out, '\f'), j + 1, true
	case 'n':
		return append(out, '\n'), j + 1, true
	case 'r':
		return append(out, '\r'), j + 1, true
	case 't':
		return append(out, '\t'), j + 1, true
	case 'u':
		r, ok := hex4(d.b, j+1)
		if !ok {
			return nil, 0, false
		}
		j += 5
		if utf16.IsSurrogate(r) {
			// Only a valid pair: encoding/json turns a lone half into U+FFFD.
			if j+6 > len(d.b) || d.b[j] != '\\' || d.b[j+1] != 'u' {
				return nil, 0, false
			}
			r2, ok := hex4(d.b, j+2)
			if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
				return nil, 0, false
			}
			j += 6
		}
		return utf8.AppendRune(out, r), j, true
	}
	return nil, 0, false
}

func hex4(b []byte, j int) (rune, bool) {
	if j+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[j : j+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// number returns the literal of a JSON number, checked against the grammar.
func (d *jdec) number() []byte {
	d.ws()
	start, j := d.i, d.i
	digits := func() int {
		k := j
		for j < len(d.b) && '0' <= d.b[j] && d.b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	if n := digits(); n == 0 || (n > 1 && d.b[j-n] == '0') {
		d.fail()
		return nil
	}
	if j < len(d.b) && d.b[j] == '.' {
		j++
		if digits() == 0 {
			d.fail()
			return nil
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			d.fail()
			return nil
		}
	}
	d.i = j
	return d.b[start:j]
}

func (d *jdec) int64() int64 {
	lit := d.number()
	if d.bad {
		return 0
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil { // a fraction, an exponent, an overflow
		d.fail()
	}
	return n
}

func (d *jdec) int() int { return int(d.int64()) }

func (d *jdec) float64() float64 {
	lit := d.number()
	if d.bad {
		return 0
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		d.fail()
	}
	return f
}

func (d *jdec) bool() bool {
	switch {
	case d.literal("true"):
		return true
	case d.literal("false"):
		return false
	}
	d.fail()
	return false
}

// literal consumes lit when it comes next.
func (d *jdec) literal(lit string) bool {
	if d.peek() == lit[0] && len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// null consumes a null; encoding/json leaves a field alone for it (or sets
// a pointer or a slice to nil, their zero in a fresh record).
func (d *jdec) null() bool { return d.literal("null") }

func (d *jdec) time() time.Time {
	var t time.Time
	if d.null() {
		return t
	}
	start := d.i
	if _, ok := d.strBytes(); !ok {
		return t
	}
	if err := t.UnmarshalJSON(d.b[start:d.i]); err != nil {
		d.fail()
	}
	return t
}

func (d *jdec) strPtr() *string {
	if d.null() {
		return nil
	}
	s := d.str()
	return &s
}

func (d *jdec) strings() []string {
	if d.null() {
		return nil
	}
	if d.peek() != '[' {
		d.fail()
		return nil
	}
	d.i++
	out := []string{}
	for first := true; ; first = false {
		c := d.peek()
		if c == ']' {
			d.i++
			return out
		}
		if !first {
			if c != ',' {
				d.fail()
				return nil
			}
			d.i++
		}
		out = append(out, d.istr())
		if d.bad {
			return nil
		}
	}
}

// nested decodes a value that is not worth a fast path (rare nested
// records) with encoding/json, after checking its extent.
func (d *jdec) nested(v any) {
	start := d.i
	d.skip(0)
	if d.bad {
		return
	}
	if err := json.Unmarshal(d.b[start:d.i], v); err != nil {
		d.fail()
	}
}

// skip consumes one value, checking it against the JSON grammar.
func (d *jdec) skip(depth int) {
	if depth > 1000 {
		d.fail()
		return
	}
	switch c := d.peek(); {
	case c == '{':
		d.i++
		for first := true; d.next(first); first = false {
			d.skip(depth + 1)
		}
	case c == '[':
		d.i++
		d.skipArray(depth)
	case c == '"':
		d.strBytes()
	case c == '-' || ('0' <= c && c <= '9'):
		d.number()
	case !d.literal("true") && !d.literal("false") && !d.null():
		d.fail()
	}
}

func (d *jdec) skipArray(depth int) {
	for first := true; !d.bad; first = false {
		c := d.peek()
		if c == ']' {
			d.i++
			return
		}
		if !first {
			if c != ',' {
				d.fail()
				return
			}
			d.i++
		}
		d.skip(depth + 1)
	}
}

// field is one JSON key of a record and how to decode its value.
type field[T any] struct {
	name string
	set  func(*jdec, *T)
}

// fieldTable lists a record's fields in the order they are written.
type fieldTable[T any] []field[T]

// find returns the index of key, trying at first (where the previous key's
// successor is) before searching.
func (t fieldTable[T]) find(key []byte, at int) int {
	if at < len(t) && t[at].name == string(key) {
		return at
	}
	for i := range t {
		if t[i].name == string(key) {
			return i
		}
	}
	return -1
}

// decodeFast decodes an object whose keys are all in fields into v and
// reports whether it could; nothing may follow the object.
func decodeFast[T any](raw []byte, in *interner, v *T, fields fieldTable[T]) bool {
	d := &jdec{b: raw, intern: in}
	if !d.open() {
		return false
	}
	at := 0
	for first := true; d.next(first); first = false {
		if at = fields.find(d.key, at); at < 0 {
			return false
		}
		fields[at].set(d, v)
		if d.bad {
			return false
		}
		at++
	}
	return !d.bad && d.peek() == 0 && d.i == len(raw)
}

// formatVersionFast reads the format_version of a generic record, checking
// the whole record against the JSON grammar.
func formatVersionFast(raw []byte) (int, bool) {
	d := &jdec{b: raw}
	if !d.open() {
		return 0, false
	}
	fv := 0
	for first := true; d.next(first); first = false {
		switch key := string(d.key); {
		case key == "format_version":
			if !d.null() {
				fv = d.int()
			}
		case foldEq(key, "format_version"):
			return 0, false // encoding/json matches keys without case
		default:
			d.skip(0)
		}
		if d.bad {
			return 0, false
		}
	}
	return fv, !d.bad && d.peek() == 0 && d.i == len(raw)
}

// foldEq compares ASCII keys without case; a key that is not ASCII may
// match in encoding/json's Unicode folding ("ſ" is "s"), so it reports
// true for it, which sends the record to encoding/json.
func foldEq(a, b string) bool {
	for i := range len(a) {
		if a[i] >= 0x80 {
			return true
		}
	}
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if x|0x20 != y|0x20 {
			return false
		}
	}
	return true
}
