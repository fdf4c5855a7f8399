package run

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// SessionHistory is where the resolver reads prior native session ids: the
// state store, never the state directory.
type SessionHistory interface {
	PriorSession(mailboxID, adapterID, excludeRunID string) (state.LLMSession, bool, error)
	OtherAdapterSession(mailboxID, adapterID string) (bool, error)
	FailedResumes(mailboxID, adapterID, nativeID, excludeRunID string) int
}

// deadResume is how many resumes of one native id may fail, in ways the
// adapter does not recognise, before the next run starts fresh
// (resume_failed): no mailbox loops on a dead session.
const deadResume = 2

// SessionInput is everything the resolver weighs for one run.
type SessionInput struct {
	Mailbox state.Mailbox
	RunID   string
	// Enabled is AGENT_SESSION_RESUME resolved for the project.
	Enabled bool
	Adapter agents.Capabilities
	// AdapterID is the adapter's id.
	AdapterID string
	// Installation is the detected CLI for the adapter on this runner, nil
	// when it was never detected.
	Installation *state.AgentInstallation
	// Runner is "image" or "host".
	Runner      string
	Credentials sandbox.CredentialMounts
}

// SessionDecision is the resolver's answer. Ref is nil when the feature does
// not apply, and then Why says which condition failed.
type SessionDecision struct {
	Ref *agents.SessionRef
	Why string
}

// SessionResolver applies the rules of docs/design.md section 4.
type SessionResolver struct {
	History SessionHistory
	Store   SessionStore
}

// NotApplicable returns why named sessions do not apply to a run, or "" when
// they do. It checks every condition of section 4, rule 1, in order.
func NotApplicable(in SessionInput) string {
	switch {
	case !in.Enabled:
		return "AGENT_SESSION_RESUME is off"
	case !in.Adapter.ResumableSessions:
		return "the adapter does not declare resumable sessions"
	case in.Installation == nil:
		return "the agent CLI was not detected"
	case !in.Installation.ResumableSessions:
		if in.Installation.Reason != "" {
			return in.Installation.Reason
		}
		return "the detected CLI version is outside the verified range"
	case !sandbox.InContainer(in.Runner):
		return "the " + in.Runner + " runner never resumes sessions"
	case in.Mailbox.Kind != state.KindIssue:
		return "only issue mailboxes keep sessions"
	case in.Mailbox.BranchName == "":
		return "the mailbox has no branch name yet"
	}
	if m, ok := in.Credentials.Overlap(in.AdapterID, in.Adapter.SessionStatePath); ok {
		return fmt.Sprintf("credential mount %s overlaps the session path %s", m.Container, in.Adapter.SessionStatePath)
	}
	return ""
}

// Resolve decides whether the run gets a named session and, if so, whether it
// resumes. The name is the frozen branch name; the prior id is the latest
// llm_session of the same mailbox and adapter with a native id.
func (r SessionResolver) Resolve(in SessionInput) (SessionDecision, error) {
	if why := NotApplicable(in); why != "" {
		return SessionDecision{Why: why}, nil
	}
	ref := &agents.SessionRef{
		Name:         in.Mailbox.BranchName,
		HostStateDir: r.Store.Dir(in.Mailbox, in.AdapterID),
	}
	prior, found, err := r.History.PriorSession(in.Mailbox.ID, in.AdapterID, in.RunID)
	if err != nil && !found {
		// An unreadable record might have been the latest: start fresh
		// rather than fail the run, and say so in the log.
		var bad *state.UnreadableError
		if !errors.As(err, &bad) {
			return SessionDecision{}, fmt.Errorf("look up prior session of %s: %w", in.Mailbox.ID, err)
		}
	}
	switch {
	case found && r.History.FailedResumes(in.Mailbox.ID, in.AdapterID, *prior.NativeSessionID, in.RunID) >= deadResume:
		ref.FreshReason = agents.FallbackResumeFailed
	case found:
		ref.ResumeID = *prior.NativeSessionID
	default:
		other, err := r.History.OtherAdapterSession(in.Mailbox.ID, in.AdapterID)
		if err != nil && !other {
			var bad *state.UnreadableError
			if !errors.As(err, &bad) {
				return SessionDecision{}, fmt.Errorf("look up other adapters' sessions of %s: %w", in.Mailbox.ID, err)
			}
		}
		ref.FreshReason = agents.FallbackNoPriorSession
		if other {
			ref.FreshReason = agents.FallbackAdapterChanged
		}
	}
	return SessionDecision{Ref: ref}, nil
}

// SessionStore owns the session state folders:
// {base}/.agent-sessions/{forge}/{owner}-{project}-{kind}-{iid}/{adapter_id},
// each level mode 0700. One forge's mailboxes never share a folder with
// another's, nor an issue with the merge request of the same number.
type SessionStore struct {
	Base string
}

// Dir is the state folder of one mailbox and adapter.
func (s SessionStore) Dir(mb state.Mailbox, adapterID string) string {
	return filepath.Join(s.mailboxDir(mb), url.PathEscape(adapterID))
}

func (s SessionStore) root() string { return filepath.Join(s.Base, ".agent-sessions") }

func (s SessionStore) mailboxDir(mb state.Mailbox) string {
	return filepath.Join(s.root(), url.PathEscape(mb.Forge), legacyName(mb.Owner, mb.Project, string(mb.Kind), mb.IID))
}

// legacyName is a mailbox's folder name, as it was directly under
// .agent-sessions before there could be several forges.
func legacyName(owner, project, kind string, iid int64) string {
	return url.PathEscape(owner) + "-" + url.PathEscape(project) + "-" + kind + "-" + strconv.FormatInt(iid, 10)
}

// Adopt moves the folders of the layout without a forge level (one forge
// per bot, before several could be configured) under forge, the one forge
// they can belong to: an upgrade keeps every session. It returns how many
// moved; a folder already at its new place stays where it is.
func (s SessionStore) Adopt(forge string) (int, error) {
	entries, err := os.ReadDir(s.root())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("adopt session folders: %w", err)
	}
	to := filepath.Join(s.root(), url.PathEscape(forge))
	moved := 0
	for _, e := range entries {
		if !e.IsDir() || !legacyFolder.MatchString(e.Name()) {
			continue
		}
		if err := os.MkdirAll(to, 0o700); err != nil {
			return moved, fmt.Errorf("adopt session folders: %w", err)
		}
		if _, err := os.Stat(filepath.Join(to, e.Name())); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(s.root(), e.Name()), filepath.Join(to, e.Name())); err != nil {
			return moved, fmt.Errorf("adopt session folder %s: %w", e.Name(), err)
		}
		moved++
	}
	return moved, os.Chmod(to, 0o700)
}

// legacyFolder matches a mailbox folder of the layout without a forge level.
var legacyFolder = regexp.MustCompile(`^.+-.+-issue-[0-9]+$`)

// Ensure creates the state folder and its parents with mode 0700 and, when
// the bot runs as root, hands the folder to the sandbox's uid:gid so the CLI
// can write in it (the daemon mounts it, so the parents stay the bot's).
func (s SessionStore) Ensure(mb state.Mailbox, adapterID string, uid, gid int) (string, error) {
	dir := s.Dir(mb, adapterID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create session folder: %w", err)
	}
	for _, d := range []string{s.root(), filepath.Dir(s.mailboxDir(mb)), s.mailboxDir(mb), dir} {
		if err := os.Chmod(d, 0o700); err != nil { // MkdirAll's mode passes through the umask
			return "", fmt.Errorf("session folder mode: %w", err)
		}
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", fmt.Errorf("hand session folder to %d:%d: %w", uid, gid, err)
		}
	}
	return dir, nil
}

// RemoveMailbox deletes every adapter's state of a mailbox (cleanup).
func (s SessionStore) RemoveMailbox(mb state.Mailbox) error {
	if err := os.RemoveAll(s.mailboxDir(mb)); err != nil {
		return fmt.Errorf("remove session state of %s: %w", mb.ID, err)
	}
	return nil
}
