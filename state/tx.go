package state

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// change is a pending write: raw JSON and its decoded value, or a delete.
type change struct {
	raw     []byte
	val     any
	deleted bool
	hash    plumbing.Hash
}

// Tx is one transaction. Its reads see the committed tip, the writes of the
// transactions batched before it, and its own writes. It is only valid
// inside the function given to Update.
type Tx struct {
	ctx    context.Context
	snap   *snapshot
	base   map[string]*change // writes of earlier transactions in the batch
	writes map[string]*change
}

// Context returns the context of the Update call.
func (tx *Tx) Context() context.Context { return tx.ctx }

func (tx *Tx) lookup(path string) (*change, *record) {
	if c, ok := tx.writes[path]; ok {
		return c, nil
	}
	if c, ok := tx.base[path]; ok {
		return c, nil
	}
	return nil, tx.snap.rec(path)
}

// Get returns the raw JSON of the record at path, ErrNotFound, or an
// *UnreadableError.
func (tx *Tx) Get(path string) ([]byte, error) {
	c, r := tx.lookup(path)
	switch {
	case c != nil && c.deleted:
		return nil, fmt.Errorf("get %s: %w", path, ErrNotFound)
	case c != nil:
		return c.raw, nil
	case r == nil:
		return nil, fmt.Errorf("get %s: %w", path, ErrNotFound)
	case r.err != nil:
		return nil, r.err
	}
	raw, err := tx.snap.body(r)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	return raw, nil
}

// value returns the decoded typed record at path.
func (tx *Tx) value(path string) (any, error) {
	c, r := tx.lookup(path)
	switch {
	case c != nil && c.deleted:
		return nil, fmt.Errorf("get %s: %w", path, ErrNotFound)
	case c != nil:
		return c.val, nil
	case r == nil:
		return nil, fmt.Errorf("get %s: %w", path, ErrNotFound)
	case r.err != nil:
		return nil, r.err
	}
	return r.val, nil
}

// Put stores v as JSON at path, a generic record such as
// "events/2026/11/30/<delivery>.json". Paths under mailboxes/,
// installations/ and settings/ are written with the typed methods only.
func (tx *Tx) Put(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	return tx.PutRaw(path, raw)
}

// PutRaw stores raw, which must be a JSON object, at path (see Put).
func (tx *Tx) PutRaw(path string, raw []byte) error {
	if err := validatePath(path); err != nil {
		return err
	}
	if reservedPrefix(path) {
		return fmt.Errorf("put %s: typed records are written with their typed methods", path)
	}
	if _, err := decodeRecord(path, raw); err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	tx.writes[path] = &change{raw: append([]byte(nil), raw...)}
	return nil
}

// Delete removes the record at path (a no-op when it does not exist).
func (tx *Tx) Delete(path string) error {
	if err := validatePath(path); err != nil {
		return err
	}
	tx.writes[path] = &change{deleted: true}
	return nil
}

// List returns the record paths under dir (recursively), including this
// transaction's and its batch's writes.
func (tx *Tx) List(dir string) []string {
	dir = strings.Trim(dir, "/")
	set := map[string]bool{}
	for _, p := range tx.snap.listFiles(dir, true) {
		set[p] = true
	}
	prefix := dir + "/"
	for _, m := range []map[string]*change{tx.base, tx.writes} {
		for p, c := range m {
			if dir == "" || strings.HasPrefix(p, prefix) {
				set[p] = !c.deleted
			}
		}
	}
	out := make([]string, 0, len(set))
	for p, ok := range set {
		if ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (tx *Tx) putTyped(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	tx.writes[path] = &change{raw: append(raw, '\n'), val: v}
	return nil
}

// Mailbox returns the mailbox with key k, ErrNotFound or an *UnreadableError.
func (tx *Tx) Mailbox(k MailboxKey) (Mailbox, error) {
	if err := k.validate(); err != nil {
		return Mailbox{}, err
	}
	p := k.dir() + "/mailbox.json"
	if c, r := tx.lookup(p); c == nil && r != nil && r.err == nil {
		return tx.snap.wholeMailbox(p, r)
	}
	v, err := tx.value(p)
	if err != nil {
		return Mailbox{}, err
	}
	return *v.(*Mailbox), nil
}

// PutMailbox stores m, setting its format version, its ID from its key,
// CreatedAt when zero and UpdatedAt to now.
func (tx *Tx) PutMailbox(m Mailbox) error {
	k := m.Key()
	if err := k.validate(); err != nil {
		return err
	}
	m.FormatVersion = FormatVersion
	m.ID = k.ID()
	m.UpdatedAt = now()
	if m.CreatedAt.IsZero() {
		m.CreatedAt = m.UpdatedAt
	}
	m.Labels = append([]string(nil), m.Labels...)
	return tx.putTyped(k.dir()+"/mailbox.json", &m)
}

// DeleteMailbox removes the mailbox with key k and all its runs and llm
// sessions (mailbox cleanup).
func (tx *Tx) DeleteMailbox(k MailboxKey) error {
	if err := k.validate(); err != nil {
		return err
	}
	for _, p := range tx.List(k.dir()) {
		tx.writes[p] = &change{deleted: true}
	}
	return nil
}

func runPath(mailboxID, id string) (string, error) {
	dir, err := mailboxDir(mailboxID)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("run of mailbox %s: id is required", mailboxID)
	}
	return runPathIn(dir, id), nil
}

// runPathIn is the path of run id's record in the mailbox folder dir.
func runPathIn(dir, id string) string { return dir + "/runs/" + escapeSegment(id) + ".json" }

func sessionPath(mailboxID, id string) (string, error) {
	dir, err := mailboxDir(mailboxID)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("llm session of mailbox %s: id is required", mailboxID)
	}
	return dir + "/llm_sessions/" + escapeSegment(id) + ".json", nil
}

// Run returns run id of mailbox mailboxID.
func (tx *Tx) Run(mailboxID, id string) (Run, error) {
	p, err := runPath(mailboxID, id)
	if err != nil {
		return Run{}, err
	}
	c, r := tx.lookup(p)
	if c != nil || r == nil || r.err != nil {
		v, err := tx.value(p)
		if err != nil {
			return Run{}, err
		}
		return *v.(*Run), nil
	}
	return tx.snap.run(p, r)
}

// PutRun stores r under its mailbox, setting its format version and
// CreatedAt when zero, and keeping only the tail of a log over MaxRunLog.
func (tx *Tx) PutRun(r Run) error {
	p, err := runPath(r.MailboxID, r.ID)
	if err != nil {
		return err
	}
	r.FormatVersion = FormatVersion
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now()
	}
	r.Log = truncateLog(r.Log)
	return tx.putTyped(p, &r)
}

// LLMSession returns llm session id of mailbox mailboxID.
func (tx *Tx) LLMSession(mailboxID, id string) (LLMSession, error) {
	p, err := sessionPath(mailboxID, id)
	if err != nil {
		return LLMSession{}, err
	}
	c, r := tx.lookup(p)
	if c != nil || r == nil || r.err != nil {
		v, err := tx.value(p)
		if err != nil {
			return LLMSession{}, err
		}
		return *v.(*LLMSession), nil
	}
	return tx.snap.session(p, r)
}

// PutLLMSession stores ls under its mailbox, setting its format version
// and CreatedAt when zero.
func (tx *Tx) PutLLMSession(ls LLMSession) error {
	p, err := sessionPath(ls.MailboxID, ls.ID)
	if err != nil {
		return err
	}
	if ls.RunID == "" || ls.AdapterID == "" {
		return fmt.Errorf("llm session %s: run_id and adapter_id are required", ls.ID)
	}
	ls.FormatVersion = FormatVersion
	if ls.CreatedAt.IsZero() {
		ls.CreatedAt = now()
	}
	return tx.putTyped(p, &ls)
}

// PutInstallation stores a detected agent installation, replacing the one
// with the same adapter, runner and image.
func (tx *Tx) PutInstallation(a AgentInstallation) error {
	p, err := a.path()
	if err != nil {
		return err
	}
	a.FormatVersion = FormatVersion
	if a.DetectedAt.IsZero() {
		a.DetectedAt = now()
	}
	return tx.putTyped(p, &a)
}

// PutSetting stores a setting override, setting UpdatedAt to now. Value
// must be valid JSON (a string value is a quoted JSON string).
func (tx *Tx) PutSetting(o SettingOverride) error {
	p, err := o.path()
	if err != nil {
		return err
	}
	if !json.Valid(o.Value) {
		return fmt.Errorf("setting %s: value is not valid JSON", o.Key)
	}
	o.FormatVersion = FormatVersion
	o.UpdatedAt = now()
	o.Value = append(json.RawMessage(nil), o.Value...)
	return tx.putTyped(p, &o)
}

// DeleteSetting removes a setting override.
func (tx *Tx) DeleteSetting(scope, forge, owner, project, key string) error {
	p, err := SettingOverride{Scope: scope, Forge: forge, Owner: owner, Project: project, Key: key}.path()
	if err != nil {
		return err
	}
	tx.writes[p] = &change{deleted: true}
	return nil
}
