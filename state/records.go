package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the newest record format this code reads and the one it
// writes. A record carrying a higher format_version is reported unreadable
// rather than misread.
const FormatVersion = 1

// MaxRunLog bounds the agent output kept in a Run record; longer logs keep
// their tail behind a truncation marker.
const MaxRunLog = 256 << 10

// Kind says whether a mailbox follows an issue or a merge request.
type Kind string

// Mailbox kinds.
const (
	KindIssue Kind = "issue"
	KindMR    Kind = "mr"
)

// RunStatus is the life state of a run.
type RunStatus string

// Run statuses.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunTimeout   RunStatus = "timeout"
	RunCanceled  RunStatus = "canceled"
)

// Setting scopes.
const (
	ScopeOrganization = "organization"
	ScopeProject      = "project"
)

// MailboxKey identifies a mailbox on its forge.
type MailboxKey struct {
	Forge   string
	Owner   string
	Project string
	Kind    Kind
	IID     int64
}

// ID is the mailbox's stable identifier, "{forge}/{owner}/{project}/{kind}/{iid}"
// with each part path-escaped (a GitLab subgroup owner "a/b" becomes "a%2Fb").
func (k MailboxKey) ID() string {
	return escapeSegment(k.Forge) + "/" + escapeSegment(k.Owner) + "/" +
		escapeSegment(k.Project) + "/" + string(k.Kind) + "/" + strconv.FormatInt(k.IID, 10)
}

func (k MailboxKey) validate() error {
	if k.Forge == "" || k.Owner == "" || k.Project == "" {
		return fmt.Errorf("mailbox key %q: forge, owner and project are required", k.ID())
	}
	if k.Kind != KindIssue && k.Kind != KindMR {
		return fmt.Errorf("mailbox key %q: kind %q is not %q or %q", k.ID(), k.Kind, KindIssue, KindMR)
	}
	if k.IID <= 0 {
		return fmt.Errorf("mailbox key %q: iid must be positive", k.ID())
	}
	return nil
}

// dir is the folder holding the mailbox record and its runs and llm sessions.
// Issues are bucketed by hundreds so that no tree grows with a project's size.
func (k MailboxKey) dir() string {
	return "mailboxes/" + escapeSegment(k.Forge) + "/" + escapeSegment(k.Owner) + "/" +
		escapeSegment(k.Project) + "/" + string(k.Kind) + "/" + strconv.FormatInt(k.IID/100, 10) +
		"/" + strconv.FormatInt(k.IID, 10)
}

// ParseMailboxID reverses MailboxKey.ID.
func ParseMailboxID(id string) (MailboxKey, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 5 {
		return MailboxKey{}, fmt.Errorf("mailbox id %q: want forge/owner/project/kind/iid", id)
	}
	var k MailboxKey
	var err error
	for i, p := range []*string{&k.Forge, &k.Owner, &k.Project} {
		if *p, err = url.PathUnescape(parts[i]); err != nil {
			return MailboxKey{}, fmt.Errorf("mailbox id %q: %w", id, err)
		}
	}
	k.Kind = Kind(parts[3])
	if k.IID, err = strconv.ParseInt(parts[4], 10, 64); err != nil {
		return MailboxKey{}, fmt.Errorf("mailbox id %q: iid: %w", id, err)
	}
	if k.ID() != id {
		return MailboxKey{}, fmt.Errorf("mailbox id %q is not in canonical form %q", id, k.ID())
	}
	return k, k.validate()
}

func mailboxDir(id string) (string, error) {
	k, err := ParseMailboxID(id)
	if err != nil {
		return "", err
	}
	return k.dir(), nil
}

// Mailbox is the bot's record of one issue or merge request.
type Mailbox struct {
	FormatVersion int    `json:"format_version"`
	ID            string `json:"id"`
	Forge         string `json:"forge"`
	Owner         string `json:"owner"`
	Project       string `json:"project"`
	Kind          Kind   `json:"kind"`
	IID           int64  `json:"iid"`
	Title         string `json:"title"`
	Status        string `json:"status"`
	Phase         string `json:"phase"`
	BranchName    string `json:"branch_name"` // empty until frozen at the first run
	LLMRetries    int    `json:"llm_retries"`
	CIFixAttempts int    `json:"ci_fix_attempts"`
	// ConflictFixAttempts counts the conflict_resolution runs since the merge
	// request last merged cleanly.
	ConflictFixAttempts int      `json:"conflict_fix_attempts,omitempty"`
	Labels              []string `json:"labels"` // as last seen on the forge
	IssueURL            string   `json:"issue_url"`
	MergeRequestIID     int64    `json:"merge_request_iid,omitempty"`
	MergeRequestURL     string   `json:"merge_request_url,omitempty"`
	// Author is who opened the issue.
	Author string `json:"author,omitempty"`
	// Flow is what the type label asked for: "task", "analysis" or "question".
	Flow string `json:"flow,omitempty"`
	// ActiveRunID is the run in progress, whose end the engine has not applied yet.
	ActiveRunID string `json:"active_run_id,omitempty"`
	// UntilGreen is set by ai::retry_until_green: keep fixing CI up to the hard cap.
	UntilGreen bool `json:"until_green,omitempty"`
	// ReviewSeenID is the highest review comment id already handed to a run.
	ReviewSeenID int64 `json:"review_seen_id,omitempty"`
	// HeadSHA is the last commit the bot pushed or saw on its merge request.
	HeadSHA string `json:"head_sha,omitempty"`
	// Quarantined are the events whose handling failed (an error or a
	// panic) every time it was tried; ai::retry handles them again.
	Quarantined []QuarantinedEvent `json:"quarantined,omitempty"`
	// Budget is the issue's cost budget as the engine last checked it,
	// before a run; nil while no budget applies.
	Budget *Budget `json:"budget,omitempty"`
	// Validated is what ai::validate_plan approved: the development and
	// every run after it use that plan, and hold when it or the issue's
	// description changed since; nil before a validation.
	Validated *Validation `json:"validated,omitempty"`
	// PlannedAt is when the bot first posted the issue's plan; zero before
	// (and in records written before it was kept).
	PlannedAt time.Time `json:"planned_at,omitzero"`
	// MergeRequestAt is when the bot first found or opened the issue's
	// merge request; zero before.
	MergeRequestAt time.Time `json:"merge_request_at,omitzero"`
	// StatusSince is when the mailbox took its status; zero in records
	// written before it was kept. Unlike UpdatedAt, which every save moves
	// (the poller's of a merge request waiting for review too), it moves
	// only when the work does.
	StatusSince time.Time `json:"status_since,omitzero"`
	// End is how the mailbox was finished (merged, or closed without a
	// merge), by whom and when; nil while it is not finished, or finished
	// otherwise (a plan or an answer that ends its flow).
	End *MailboxEnd `json:"end,omitempty"`
	// Trial is the arm of the project's agent trial (AGENT_TRIAL) the issue
	// was given at its assignment: every run of it uses that adapter and
	// model, whatever AGENT_ADAPTER says later; nil outside a trial.
	Trial     *Trial    `json:"trial,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Trial is the arm of an agent trial an issue was assigned: its name as
// the setting spells it (Arm: "codex" or "codex/gpt-5"), the adapter,
// provider and model its runs use, and the setting's value it was chosen
// under (the choice counts the earlier assignments of that same value).
type Trial struct {
	Arm      string `json:"arm"`
	Adapter  string `json:"adapter"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Setting  string `json:"setting"`
}

// How a mailbox was finished, as MailboxEnd.How.
const (
	EndMerged = "merged" // its merge request was merged
	EndClosed = "closed" // the issue or its merge request was closed without a merge
)

// MailboxEnd is how a mailbox was finished: How (EndMerged or EndClosed),
// By (the login that merged or closed, as the event named it or, for a
// merge the bot read on the merge request, as the forge's API says; empty
// for a close the bot read, which names nobody) and At.
type MailboxEnd struct {
	How string    `json:"how"`
	By  string    `json:"by,omitempty"`
	At  time.Time `json:"at"`
}

// Validation binds a plan validation to what was validated: the bot's plan
// comment (its id and the SHA-256 of its body) and the SHA-256 of the
// issue's description outside the bot's section, who validated and when.
type Validation struct {
	PlanCommentID int64     `json:"plan_comment_id"`
	PlanSHA256    string    `json:"plan_sha256"`
	BodySHA256    string    `json:"body_sha256"`
	By            string    `json:"by"`
	At            time.Time `json:"at"`
}

// Budget is an issue's cost budget (AGENT_BUDGET_TOKENS, AGENT_BUDGET_USD)
// with the steps people granted, and the step it paused, if it did.
type Budget struct {
	// Tokens and USD are the limits with the granted steps; 0 is no limit.
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
	// Steps counts the budget steps granted (ai::budget_step): each adds
	// the setting's amount once more.
	Steps int `json:"steps,omitempty"`
	// Paused is the step of the lifecycle the budget held back, taken again
	// when a step is granted; nil when the mailbox is not paused.
	Paused *PausedStep `json:"paused,omitempty"`
}

// PausedStep is a step of the lifecycle held back, with what it needs to be
// taken later: the status it was taken from and the run's phase, trigger and
// input.
type PausedStep struct {
	Step    string    `json:"step"`
	From    string    `json:"from"`
	Phase   string    `json:"phase,omitempty"`
	Trigger string    `json:"trigger,omitempty"`
	Input   string    `json:"input,omitempty"`
	At      time.Time `json:"at"`
}

// Spend is what runs cost, as counted against a budget: tokens (input and
// output) and dollars, and how many runs used tokens without a known price.
type Spend struct {
	Tokens   int64   `json:"tokens"`
	USD      float64 `json:"usd"`
	Unpriced int     `json:"unpriced,omitempty"`
}

// SpendOf is what one run cost: its tokens as the model gateway counted
// them when the run was sealed (the gateway sees every request, whatever
// the CLI reports), else as its CLI reported them; its dollars as the CLI
// reported them (Alfred keeps no price table). A run that used tokens with
// no dollar figure counts as unpriced.
func SpendOf(run Run, sessions []LLMSession) Spend {
	var sp Spend
	for _, s := range sessions {
		sp.Tokens += s.InputTokens + s.OutputTokens
		sp.USD += s.CostUSD
	}
	if g := run.Gateway; g != nil && g.InputTokens+g.OutputTokens > 0 {
		sp.Tokens = g.InputTokens + g.OutputTokens
	}
	if sp.Tokens > 0 && sp.USD == 0 {
		sp.Unpriced = 1
	}
	return sp
}

// Add sums two spends.
func (s Spend) Add(o Spend) Spend {
	return Spend{Tokens: s.Tokens + o.Tokens, USD: s.USD + o.USD, Unpriced: s.Unpriced + o.Unpriced}
}

// MailboxDone is the status of a finished mailbox: the lifecycle's one
// terminal status (bot/lifecycle.StatusDone, which a bot test holds equal).
// Its mailboxes wait for nobody: only an event (a reopened issue, a
// command label) moves them again.
const MailboxDone = "done"

// Finished tells whether the mailbox is finished: in status MailboxDone
// with no run in progress. The store keeps an index of the mailboxes that
// are not (OpenMailboxes).
func (m Mailbox) Finished() bool { return m.Status == MailboxDone && m.ActiveRunID == "" }

// Key returns the mailbox's forge identity.
func (m Mailbox) Key() MailboxKey {
	return MailboxKey{Forge: m.Forge, Owner: m.Owner, Project: m.Project, Kind: m.Kind, IID: m.IID}
}

// Run is one execution of one phase for one mailbox.
type Run struct {
	FormatVersion int       `json:"format_version"`
	ID            string    `json:"id"`
	MailboxID     string    `json:"mailbox_id"`
	Phase         string    `json:"phase"`
	Trigger       string    `json:"trigger"` // event delivery id or command label
	Runner        string    `json:"runner"`  // "image" or "host"
	AdapterID     string    `json:"adapter_id"`
	Provider      string    `json:"provider"`
	Model         string    `json:"model"`
	WorktreePath  string    `json:"worktree_path"`
	Status        RunStatus `json:"status"`
	Outcome       string    `json:"outcome"`
	CreatedAt     time.Time `json:"created_at"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	FinishedAt    time.Time `json:"finished_at,omitzero"`
	Log           string    `json:"log"` // agent output, at most MaxRunLog bytes
	// Input is the phase input: the question to answer or the review feedback.
	Input string `json:"input,omitempty"`
	// Result is the agent's final text (the plan, the answer, the summary).
	Result string `json:"result,omitempty"`
	// Pushed says the run pushed HeadSHA to the issue branch.
	Pushed  bool   `json:"pushed,omitempty"`
	HeadSHA string `json:"head_sha,omitempty"`
	// NothingToDo says the run found its work already done and invoked no
	// agent (a conflict_resolution run whose merge turned out clean).
	NothingToDo bool `json:"nothing_to_do,omitempty"`
	// NoSession says why the run had no named session, when it had none.
	NoSession string `json:"no_session,omitempty"`
	// Gateway is what the model gateway saw of a sealed run; nil for a run
	// that was not sealed.
	Gateway *RunGateway `json:"gateway,omitempty"`
	// Stalled says the engine stopped the run because its CLI neither
	// printed nor made a model request for AGENT_STALL_TIMEOUT (its
	// Outcome says so); such a run blocks at once, never retried.
	Stalled bool `json:"stalled,omitempty"`
	// Steps are this run's steps of its session's transcript, as the CLI
	// recorded them, redacted and bounded (MaxRunSteps, MaxRunStepBytes).
	Steps []RunStep `json:"steps,omitempty"`
	// Transcript says where Steps sit in the session's transcript, and
	// why there are none when it could not be read; nil when no transcript
	// was read (no named session, or a CLI that keeps none).
	Transcript *RunTranscript `json:"transcript,omitempty"`
	// HandoffFrom is the earlier session whose summary the prompt of this
	// run's fresh session carried; nil without a handoff.
	HandoffFrom *RunHandoff `json:"handoff_from,omitempty"`
	// Held is the change the run left that was not pushed because it
	// broke a rule of what may leave the sandbox; nil when none was held.
	Held *RunHeld `json:"held,omitempty"`
	// PlanChanged says what changed since ai::validate_plan (the plan
	// comment, the description) when the run was not started for it.
	PlanChanged string `json:"plan_changed,omitempty"`
}

// RunHeld is a change held for a person: which files and why, and the
// patch of what the agent left (redacted, at most MaxHeldPatch bytes), so
// nothing it wrote is lost.
type RunHeld struct {
	Files []HeldFile `json:"files"`
	Patch string     `json:"patch,omitempty"`
}

// HeldFile is one file of a held change and why it was held.
type HeldFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// MaxHeldPatch bounds the patch a held change keeps on its run.
const MaxHeldPatch = 256 << 10

// RunHandoff names the session a run's handoff was made from: its adapter
// and its native id.
type RunHandoff struct {
	Adapter         string `json:"adapter"`
	NativeSessionID string `json:"native_session_id"`
}

// SessionStart says how the run's session s started, as the status comment
// and the run page put it: s.Start(), and for a run whose prompt carried a
// handoff, "fresh (adapter changed), with a handoff from claude-code
// session <id>".
func (r Run) SessionStart(s LLMSession) string {
	start := s.Start()
	if h := r.HandoffFrom; h != nil {
		start += ", with a handoff from " + h.Adapter + " session " + h.NativeSessionID
	}
	return start
}

// Bounds of the steps a run keeps.
const (
	MaxRunSteps     = 500
	MaxRunStepBytes = 256 << 10
)

// RunStep is one step of a session transcript (agents.Step as the records
// keep it): a prompt, an answer, a tool call, its result, an edit.
type RunStep struct {
	Kind   string    `json:"kind"`
	At     time.Time `json:"at,omitzero"`
	Text   string    `json:"text,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	CallID string    `json:"call_id,omitempty"`
	Args   string    `json:"args,omitempty"`
	Path   string    `json:"path,omitempty"`
	Failed bool      `json:"failed,omitempty"`
}

// Size is about how many bytes the step takes in a record.
func (s RunStep) Size() int {
	return len(s.Kind) + len(s.Text) + len(s.Tool) + len(s.CallID) + len(s.Args) + len(s.Path) + 64
}

// RunTranscript places a run's steps in its session's transcript: they
// are the steps From to Total (Total, the transcript's length when the run
// ended, is where the next run resuming the session starts), less the
// Dropped ones past the bounds. Note says why the transcript could not be
// read, or how the start was found when the previous run left no count.
type RunTranscript struct {
	From    int    `json:"from"`
	Total   int    `json:"total"`
	Dropped int    `json:"dropped,omitempty"`
	Note    string `json:"note,omitempty"`
}

// RunGateway is the model gateway's account of a sealed run: the provider
// requests it forwarded, the tokens their answers reported, and the
// requests it refused (as the run page says them, at most the first 100).
type RunGateway struct {
	Requests     int64    `json:"requests"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	Refused      []string `json:"refused,omitempty"`
	RefusedTotal int      `json:"refused_total,omitempty"`
}

// QuarantinedEvent is an event the engine gave up on: its record in the
// state branch (Path), what it was, and the last error.
type QuarantinedEvent struct {
	Delivery string    `json:"delivery_id"`
	Type     string    `json:"type"`
	Path     string    `json:"path"`
	Error    string    `json:"error"`
	At       time.Time `json:"at"`
}

// LLMSession is one adapter invocation inside a run.
type LLMSession struct {
	FormatVersion   int     `json:"format_version"`
	ID              string  `json:"id"`
	RunID           string  `json:"run_id"`
	MailboxID       string  `json:"mailbox_id"`
	AdapterID       string  `json:"adapter_id"`
	Provider        string  `json:"provider"`
	Model           string  `json:"model"`
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	DurationMS      int64   `json:"duration_ms"`
	Outcome         string  `json:"outcome"`
	SessionName     *string `json:"session_name"`
	NativeSessionID *string `json:"native_session_id"`
	Resumed         bool    `json:"resumed"`
	ResumeFallback  *string `json:"resume_fallback"`
	// ResumeOf is the native id the run tried to resume, set before the
	// invocation (nil for a fresh start or no session).
	ResumeOf  *string   `json:"resume_of,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Start says how the session started, as the status comment and the run
// page put it: "resumed", or "fresh (reason)", or "fresh".
func (s LLMSession) Start() string {
	switch {
	case s.Resumed:
		return "resumed"
	case s.ResumeFallback != nil && *s.ResumeFallback != "":
		return "fresh (" + strings.ReplaceAll(*s.ResumeFallback, "_", " ") + ")"
	}
	return "fresh"
}

// AgentInstallation is a detected agent CLI in an image or on the host.
type AgentInstallation struct {
	FormatVersion     int       `json:"format_version"`
	AdapterID         string    `json:"adapter_id"`
	Runner            string    `json:"runner"` // "image", "kubernetes" or "host"
	Image             string    `json:"image"`  // empty for the host runner
	Version           string    `json:"version"`
	ResumableSessions bool      `json:"resumable_sessions"`
	Reason            string    `json:"reason"` // why sessions are not resumable
	DetectedAt        time.Time `json:"detected_at"`
}

func (a AgentInstallation) path() (string, error) {
	if a.AdapterID == "" || (a.Runner != "image" && a.Runner != "kubernetes" && a.Runner != "host") {
		return "", fmt.Errorf("agent installation %q/%q: adapter_id and runner image|kubernetes|host are required", a.AdapterID, a.Runner)
	}
	img := a.Image
	if img == "" {
		img = "_"
	}
	return "installations/" + escapeSegment(a.AdapterID) + "/" + a.Runner + "/" + escapeSegment(img) + ".json", nil
}

// SettingOverride is a setting value set at organization or project scope.
type SettingOverride struct {
	FormatVersion int             `json:"format_version"`
	Scope         string          `json:"scope"` // ScopeOrganization or ScopeProject
	Forge         string          `json:"forge"`
	Owner         string          `json:"owner"`
	Project       string          `json:"project"` // empty at organization scope
	Key           string          `json:"key"`
	Value         json.RawMessage `json:"value"`
	UpdatedAt     time.Time       `json:"updated_at"`
}

func settingsDir(scope, forge, owner, project string) (string, error) {
	if forge == "" || owner == "" {
		return "", fmt.Errorf("settings scope %q: forge and owner are required", scope)
	}
	switch scope {
	case ScopeOrganization:
		if project != "" {
			return "", fmt.Errorf("settings scope %q: project must be empty", scope)
		}
		return "settings/organization/" + escapeSegment(forge) + "/" + escapeSegment(owner), nil
	case ScopeProject:
		if project == "" {
			return "", fmt.Errorf("settings scope %q: project is required", scope)
		}
		return "settings/project/" + escapeSegment(forge) + "/" + escapeSegment(owner) + "/" + escapeSegment(project), nil
	}
	return "", fmt.Errorf("settings scope %q is not %q or %q", scope, ScopeOrganization, ScopeProject)
}

func (o SettingOverride) path() (string, error) {
	dir, err := settingsDir(o.Scope, o.Forge, o.Owner, o.Project)
	if err != nil {
		return "", err
	}
	if o.Key == "" {
		return "", errors.New("setting override: key is required")
	}
	return dir + "/" + escapeSegment(o.Key) + ".json", nil
}

// UnreadableError reports a record that exists in the branch but cannot be
// decoded: invalid JSON, or written by a newer format version.
type UnreadableError struct {
	Path   string // record path in the branch
	Commit string // commit at which the record was read
	Err    error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("state record %s at commit %s is unreadable: %v", e.Path, e.Commit, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// ErrNotFound is returned for a record that does not exist.
var ErrNotFound = errors.New("state record not found")

// ErrFutureVersion is wrapped by UnreadableError for a record written by a
// newer format version than FormatVersion.
var ErrFutureVersion = errors.New("format_version newer than this code knows")

// kindOf says which typed record a path holds ("" for generic records).
func kindOf(path string) string {
	switch {
	case strings.HasPrefix(path, "mailboxes/"):
		switch {
		case strings.HasSuffix(path, "/mailbox.json"):
			return "mailbox"
		case strings.Contains(path, "/runs/"):
			return "run"
		case strings.Contains(path, "/llm_sessions/"):
			return "llm_session"
		}
	case strings.HasPrefix(path, "installations/"):
		return "installation"
	case strings.HasPrefix(path, "settings/"):
		return "setting"
	}
	return ""
}

// reservedPrefix reports whether generic writes may not touch path: typed
// records are written only through their typed methods.
func reservedPrefix(path string) bool {
	for _, p := range []string{"mailboxes/", "installations/", "settings/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// decodeRecord parses raw as the typed record path holds. Generic records are
// checked to be a JSON object whose format_version, if any, is known.
func decodeRecord(path string, raw []byte) (any, error) {
	return decodeRecordIn(path, raw, nil)
}

// decodeRecordIn is decodeRecord sharing repeated strings through in (nil:
// no sharing). It tries the fast decoder first and falls back to
// encoding/json, which also words the errors.
func decodeRecordIn(path string, raw []byte, in *interner) (any, error) {
	v, fv, ok := decodeFastRecord(kindOf(path), raw, in)
	if !ok {
		var err error
		if v, fv, err = decodeSlow(kindOf(path), raw); err != nil {
			return nil, fmt.Errorf("decode JSON: %w", err)
		}
	}
	if fv > FormatVersion {
		return nil, fmt.Errorf("format_version %d: %w (%d)", fv, ErrFutureVersion, FormatVersion)
	}
	return v, nil
}

// decodeFastRecord decodes the records the fast decoder knows: the typed
// records that come by the thousand, and generic ones.
func decodeFastRecord(kind string, raw []byte, in *interner) (any, int, bool) {
	switch kind {
	case "mailbox":
		m := new(Mailbox)
		ok := decodeFast(raw, in, m, mailboxFields)
		return m, m.FormatVersion, ok
	case "run":
		r := new(Run)
		ok := decodeFast(raw, in, r, runFields)
		return r, r.FormatVersion, ok
	case "llm_session":
		s := new(LLMSession)
		ok := decodeFast(raw, in, s, sessionFields)
		return s, s.FormatVersion, ok
	case "":
		fv, ok := formatVersionFast(raw)
		return nil, fv, ok
	}
	return nil, 0, false
}

// decodeSlow decodes a record with encoding/json.
func decodeSlow(kind string, raw []byte) (any, int, error) {
	var head struct {
		FormatVersion int `json:"format_version"`
	}
	var v any
	switch kind {
	case "mailbox":
		v = new(Mailbox)
	case "run":
		v = new(Run)
	case "llm_session":
		v = new(LLMSession)
	case "installation":
		v = new(AgentInstallation)
	case "setting":
		v = new(SettingOverride)
	default:
		v = &head
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, 0, err
	}
	switch r := v.(type) {
	case *Mailbox:
		return r, r.FormatVersion, nil
	case *Run:
		return r, r.FormatVersion, nil
	case *LLMSession:
		return r, r.FormatVersion, nil
	case *AgentInstallation:
		return r, r.FormatVersion, nil
	case *SettingOverride:
		return r, r.FormatVersion, nil
	}
	return nil, head.FormatVersion, nil
}

// escapeSegment makes s one safe path segment: slashes are escaped, and no
// segment is "." or ".." or ends in ".json" (which only files do).
func escapeSegment(s string) string {
	e := url.PathEscape(s)
	switch e {
	case "":
		return "%00"
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	if strings.HasSuffix(e, ".json") {
		e = e[:len(e)-5] + "%2Ejson"
	}
	return e
}

// validatePath checks a record path: relative, clean, segments non-empty,
// the last one (and only it) ending in ".json".
func validatePath(path string) error {
	if !strings.HasSuffix(path, ".json") {
		return fmt.Errorf("record path %q must end in .json", path)
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." || strings.ContainsRune(s, 0) {
			return fmt.Errorf("record path %q has an invalid segment %q", path, s)
		}
		if i < len(segs)-1 && strings.HasSuffix(s, ".json") {
			return fmt.Errorf("record path %q: folder %q may not end in .json", path, s)
		}
	}
	return nil
}

// truncateLog keeps the tail of log within MaxRunLog bytes.
func truncateLog(log string) string {
	if len(log) <= MaxRunLog {
		return log
	}
	cut := len(log) - MaxRunLog + 64
	for cut < len(log) && (log[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut++
	}
	return fmt.Sprintf("[log truncated: %d bytes dropped]\n", cut) + log[cut:]
}
