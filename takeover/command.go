package takeover

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
)

// FileName is the archive's file name: alfred-session-{forge}-{owner}-{project}-{iid}-{adapter}.tar.gz,
// each part reduced to letters, digits, "." and "-".
func FileName(s Session) string {
	mb := s.Mailbox
	parts := []string{"alfred-session", mb.Forge, mb.Owner, mb.Project, fmt.Sprint(mb.IID), s.Descriptor.ID}
	for i, p := range parts {
		parts[i] = unsafeName.ReplaceAllString(p, "-")
	}
	return strings.Join(parts, "-") + ".tar.gz"
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// Command is the exact command that continues s on a person's machine, run
// in their clone of the project with the archive (named file) beside it:
// fetch and switch to the issue branch, unpack the session folder in the
// home where the CLI looks for it, and resume the session with the CLI's
// own interactive command (agents.Takeover). Everything that came from a
// record (the branch, the session's id) is quoted for the shell.
func Command(s Session, file string) (string, error) {
	t := s.Descriptor.Takeover
	if t == nil {
		return "", fmt.Errorf("%w: %s keeps no session a person can resume", ErrNoSession, s.Descriptor.ID)
	}
	prefix, err := homePath(s.Descriptor.SessionStatePath)
	if err != nil {
		return "", err
	}
	branch := shellQuote(s.Mailbox.BranchName)
	steps := []string{"git fetch origin " + branch, "git switch " + branch}
	if t.PerDirectory == "" {
		steps = append(steps, "tar -xzf "+shellQuote(file)+" -C ~")
	} else {
		strip := len(strings.Split(prefix, "/")) + 1 // the folder of the sandbox's directory too
		steps = append(steps, `d="$HOME/`+prefix+`/`+t.PerDirectory+`"`, `mkdir -p "$d"`,
			"tar -xzf "+shellQuote(file)+` -C "$d" --strip-components=`+fmt.Sprint(strip))
		if t.Adopt != "" {
			steps = append(steps, t.Adopt)
		}
	}
	argv := make([]string, len(t.Argv))
	for i, a := range t.Argv {
		argv[i] = shellQuote(strings.ReplaceAll(a, agents.TakeoverID, s.NativeID))
	}
	return strings.Join(append(steps, strings.Join(argv, " ")), " && "), nil
}

// shellQuote quotes s for a POSIX shell when it holds more than letters,
// digits and ._/:=@+,- (a branch name, a session id, an argument).
func shellQuote(s string) string {
	if s != "" && plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9._/:=@+,-]+$`)
