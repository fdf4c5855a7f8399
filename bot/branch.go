package bot

import (
	"strconv"
	"strings"
)

// slugMax is how many characters of the title a branch name keeps.
const slugMax = 40

// BranchName is the issue branch, {prefix}issue-{iid}-{slug}: the title
// lower-cased, every run of characters other than ASCII letters and digits
// turned into '-', cut at 40 characters, leading and trailing '-' trimmed. It is
// frozen in the mailbox at the first run and doubles as the agent session name.
func BranchName(prefix string, iid int64, title string) string {
	name := prefix + "issue-" + strconv.FormatInt(iid, 10)
	if s := Slug(title); s != "" {
		name += "-" + s
	}
	return name
}

// Slug is the title part of a branch name.
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > slugMax {
		s = s[:slugMax] // ASCII only, so bytes are characters
	}
	return strings.Trim(s, "-")
}
