package forges

import (
	"context"
	"fmt"
	"strings"
)

// Label name prefixes (docs/design.md, the lifecycle).
const (
	StatusPrefix  = "status::" // owned by the bot, exactly one at a time
	CommandPrefix = "ai::"     // added by people, removed by the bot once handled
	TypePrefix    = "type::"   // chooses the flow
	// ScopedStatusPrefix is the status labels' prefix where Forgejo and
	// Gitea scope them (up to the last '/'): exclusive, the forge itself
	// keeps one on an issue.
	ScopedStatusPrefix = "status/"
)

// StatusPrefixOf is the prefix of the status labels on a forge of kind:
// scoped, the form in which the forge keeps one status itself (Forgejo and
// Gitea: "status/", exclusive labels; GitLab: "status::", scoped labels
// where the edition has them; GitHub has none: "status::"); else "status::"
// everywhere.
func StatusPrefixOf(kind Kind, scoped bool) string {
	if scoped && kind == Forgejo {
		return ScopedStatusPrefix
	}
	return StatusPrefix
}

// StatusOf reads a status label of either form ("status::x", "status/x"):
// its status, and whether it is one.
func StatusOf(label string) (string, bool) {
	for _, p := range []string{StatusPrefix, ScopedStatusPrefix} {
		if s, ok := strings.CutPrefix(label, p); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// LabelRenamer is implemented by a Forge that renames a label in place (its
// issues keep it).
type LabelRenamer interface {
	// RenameLabel gives the label named from the name, colour,
	// description and exclusive flag of l.
	RenameLabel(ctx context.Context, p Project, from string, l Label) error
}

// ExclusiveLabels is implemented by a Forge whose label definitions carry an
// exclusive flag (Forgejo and Gitea): CreateLabel and UpdateLabel set
// Label.Exclusive and Labels reads it back. GitHub has no such flag; GitLab
// has none either, its scoped labels ("a::b") being exclusive by their name,
// on Premium only.
type ExclusiveLabels interface {
	// ExclusiveScope is the scope in which the forge keeps at most one
	// exclusive label on an issue or merge request, for a label named name
	// ("" for a name the forge gives no scope: then the flag changes nothing).
	ExclusiveScope(name string) string
}

// SyncLabels creates the labels of catalogue a project lacks and updates
// those whose colour or description differ (colours compare without '#' and
// case), or whose exclusive flag differs on a forge that stores it
// (ExclusiveLabels). A label missing under its name but found under one it
// had (Label.Formerly) is renamed where the forge can (LabelRenamer; its
// issues keep it), and counts as updated. It is idempotent: a second run
// creates and updates nothing. Labels outside the catalogue are left alone.
// The bot's catalogue is lifecycle.Labels (bot/lifecycle), made from its lifecycle table.
func SyncLabels(ctx context.Context, f Forge, p Project, catalogue []Label) (created, updated []string, err error) {
	_, exclusive := f.(ExclusiveLabels)
	have, err := f.Labels(ctx, p)
	if err != nil {
		return nil, nil, fmt.Errorf("sync labels of %s: %w", p.FullName(), err)
	}
	byName := make(map[string]Label, len(have))
	for _, l := range have {
		if _, dup := byName[l.Name]; !dup {
			byName[l.Name] = l
		}
	}
	renamer, _ := f.(LabelRenamer)
	for _, want := range catalogue {
		got, ok := byName[want.Name]
		if former := formerOf(want, byName); !ok && former != "" && renamer != nil {
			if err := renamer.RenameLabel(ctx, p, former, want); err != nil {
				return created, updated, fmt.Errorf("sync labels of %s: rename %s to %s: %w", p.FullName(), former, want.Name, err)
			}
			updated = append(updated, want.Name)
			continue
		}
		switch {
		case !ok:
			if err := f.CreateLabel(ctx, p, want); err != nil {
				return created, updated, fmt.Errorf("sync labels of %s: create %s: %w", p.FullName(), want.Name, err)
			}
			created = append(created, want.Name)
		case !SameColor(got.Color, want.Color) || got.Description != want.Description || exclusive && got.Exclusive != want.Exclusive:
			if err := f.UpdateLabel(ctx, p, want); err != nil {
				return created, updated, fmt.Errorf("sync labels of %s: update %s: %w", p.FullName(), want.Name, err)
			}
			updated = append(updated, want.Name)
		}
	}
	return created, updated, nil
}

// formerOf is the first of want's former names the project has.
func formerOf(want Label, have map[string]Label) string {
	for _, n := range want.Formerly {
		if _, ok := have[n]; ok {
			return n
		}
	}
	return ""
}

// SameColor compares two label colours ignoring a leading '#' and case.
func SameColor(a, b string) bool {
	return strings.EqualFold(strings.TrimPrefix(a, "#"), strings.TrimPrefix(b, "#"))
}
