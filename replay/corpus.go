package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// CaseFile is the name of a case's description in its folder, and RepoDir
// the folder of its repository snapshot.
const (
	CaseFile = "case.json"
	RepoDir  = "repo"
)

// The roles a comment of a case's thread is written as.
const (
	// RoleMaintainer is the person who opens the issue: the repository's
	// owner, whose words are instructions to the bot.
	RoleMaintainer = "maintainer"
	// RoleOutsider is a user with no access to the repository: the bot
	// quotes their words as material, never as instructions.
	RoleOutsider = "outsider"
)

// Limits of a case, so that a corpus cannot ask for what a replay cannot give.
const (
	maxCaseBytes  = 1 << 20 // case.json
	maxTimeLimit  = 2 * time.Hour
	defaultLimit  = 20 * time.Minute
	maxCheckLimit = 30 * time.Minute
	defaultCheck  = 5 * time.Minute
)

// caseName is what a case's folder may be called: it names repositories.
var caseName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Comment is one comment of a case's thread, written by its role.
type Comment struct {
	Role string `json:"role"`
	Body string `json:"body"`
}

// Duration is a time.Duration written as Go writes it ("20m", "90s").
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"20m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Case is one recorded issue: what the replay opens on the forge, and how it
// tells the issue was solved.
type Case struct {
	// Name is the case's folder name.
	Name string `json:"-"`
	// Dir is the case's folder; the snapshot is Dir/repo.
	Dir string `json:"-"`

	Title  string    `json:"title"`
	Body   string    `json:"body"`
	Labels []string  `json:"labels,omitempty"`
	Thread []Comment `json:"thread,omitempty"`
	// Check is the command, an argv (never a shell string), that exits 0
	// when the pull request's branch solves the issue. It runs in the
	// agent image, in a clone of the branch at /workspace.
	Check []string `json:"check"`
	// TimeLimit bounds the wait from the assignment to a pull request or
	// an end (default 20m); CheckLimit bounds the check (default 5m).
	TimeLimit  Duration `json:"time_limit,omitzero"`
	CheckLimit Duration `json:"check_limit,omitzero"`
}

// Snapshot is the folder of the case's repository snapshot.
func (c Case) Snapshot() string { return filepath.Join(c.Dir, RepoDir) }

// Load reads and validates every case of the corpus dir: one folder per
// case, in name order. A corpus with no case, a folder without case.json or
// repo/, an unknown field, a missing title or check, a bad role or limit
// is refused with an error naming the file.
func Load(dir string) ([]Case, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	var cases []Case
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			if e.Name() == "README.md" || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			errs = append(errs, fmt.Errorf("corpus %s: %s is not a case folder (one folder per case)", dir, e.Name()))
			continue
		}
		c, err := loadCase(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases = append(cases, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("corpus %s: no case (one folder per case, each with %s and %s/)", dir, CaseFile, RepoDir)
	}
	return cases, nil
}

// loadCase reads and validates the case of folder dir.
func loadCase(dir string) (Case, error) {
	name := filepath.Base(dir)
	path := filepath.Join(dir, CaseFile)
	if !caseName.MatchString(name) {
		return Case{}, fmt.Errorf("%s: the case's folder name %q must be lower-case letters, digits and dashes (at most 40): it names repositories", dir, name)
	}
	raw, err := readBounded(path, maxCaseBytes)
	if err != nil {
		return Case{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c Case
	if err := dec.Decode(&c); err != nil {
		return Case{}, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Case{}, fmt.Errorf("%s: more than one JSON value", path)
	}
	c.Name, c.Dir = name, dir
	if err := c.validate(); err != nil {
		return Case{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkSnapshot(c.Snapshot()); err != nil {
		return Case{}, err
	}
	return c, nil
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("case: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, over the %d a case may have", path, fi.Size(), limit)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("case: %w", err)
	}
	return raw, nil
}

// validate checks the fields of a decoded case and fills the defaults.
func (c *Case) validate() error {
	c.Title = strings.TrimSpace(c.Title)
	switch {
	case c.Title == "":
		return errors.New("title: missing")
	case len(c.Title) > 255:
		return errors.New("title: over 255 bytes")
	case len(c.Check) == 0 || c.Check[0] == "":
		return errors.New(`check: missing (an argv, e.g. ["sh", "-c", "test -f FILE"])`)
	case slices.Contains(c.Labels, ""):
		return errors.New("labels: an empty label")
	}
	for i, cm := range c.Thread {
		if cm.Role != RoleMaintainer && cm.Role != RoleOutsider {
			return fmt.Errorf("thread[%d].role: %q, want %q or %q", i, cm.Role, RoleMaintainer, RoleOutsider)
		}
		if strings.TrimSpace(cm.Body) == "" {
			return fmt.Errorf("thread[%d].body: empty", i)
		}
	}
	if err := limit("time_limit", &c.TimeLimit, defaultLimit, maxTimeLimit); err != nil {
		return err
	}
	return limit("check_limit", &c.CheckLimit, defaultCheck, maxCheckLimit)
}

// limit fills a zero d with dflt and refuses one under a second or over most.
func limit(field string, d *Duration, dflt, most time.Duration) error {
	switch v := time.Duration(*d); {
	case v == 0:
		*d = Duration(dflt)
	case v < time.Second || v > most:
		return fmt.Errorf("%s: %s, want between 1s and %s", field, v, most)
	}
	return nil
}

// checkSnapshot checks that the snapshot is a folder of regular files and
// folders (no link, no special file, no .git of its own), not empty.
func checkSnapshot(root string) error {
	fi, err := os.Lstat(root)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: the case's repository snapshot must be a folder", root)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Name() == ".git":
			return fmt.Errorf("%s: a snapshot holds files, not a git repository", path)
		case d.Type()&os.ModeSymlink != 0:
			return fmt.Errorf("%s: a snapshot holds no symbolic link", path)
		case !d.IsDir() && !d.Type().IsRegular():
			return fmt.Errorf("%s: a snapshot holds regular files only", path)
		case !d.IsDir():
			files++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if files == 0 {
		return fmt.Errorf("%s: the snapshot has no file", root)
	}
	return nil
}
