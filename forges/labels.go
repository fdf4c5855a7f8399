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
)

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
// (ExclusiveLabels). It is idempotent: a second run creates and updates
// nothing. Labels outside the catalogue are left alone. The bot's catalogue
// is bot.Labels, made from its lifecycle table.
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
	for _, want := range catalogue {
		got, ok := byName[want.Name]
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

// SameColor compares two label colours ignoring a leading '#' and case.
func SameColor(a, b string) bool {
	return strings.EqualFold(strings.TrimPrefix(a, "#"), strings.TrimPrefix(b, "#"))
}
