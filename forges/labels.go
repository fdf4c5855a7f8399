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

// SyncLabels makes a project's labels match it.
func Catalogue() []Label {
	return []Label{
		{Name: "status::functional_analysis", Color: "1d76db", Description: "Alfred is writing the functional analysis (set by the bot)"},
		{Name: "status::technical_analysis", Color: "0e8a16", Description: "Alfred is writing the implementation plan (set by the bot)"},
		{Name: "status::waiting_validation", Color: "fbca04", Description: "The plan waits for ai::validate_plan (set by the bot)"},
		{Name: "status::waiting_info", Color: "fef2c0", Description: "Alfred needs an answer in the thread (set by the bot)"},
		{Name: "status::in_development", Color: "5319e7", Description: "Alfred is developing on the issue branch (set by the bot)"},
		{Name: "status::in_ci", Color: "c5def5", Description: "The pull request waits for CI (set by the bot)"},
		{Name: "status::in_review", Color: "bfd4f2", Description: "CI is green; the pull request waits for review (set by the bot)"},
		{Name: "status::done", Color: "0e8a16", Description: "Merged or closed (set by the bot)"},
		{Name: "status::blocked", Color: "b60205", Description: "Alfred gave up; the blocking comment says which label unblocks it (set by the bot)"},

		{Name: "ai::validate_plan", Color: "d93f0b", Description: "Start development from the posted plan"},
		{Name: "ai::retry", Color: "e99695", Description: "Retry the failed phase with counters reset"},
		{Name: "ai::retry_once", Color: "f9d0c4", Description: "Allow exactly one more attempt of the failed phase"},
		{Name: "ai::retry_until_green", Color: "c2e0c6", Description: "Keep fixing CI until it is green, up to a hard cap"},

		{Name: "type::task", Color: "0052cc", Description: "Alfred runs the whole flow: analysis, plan, development"},
		{Name: "type::bug", Color: "d73a4a", Description: "Alfred runs the whole flow for a bug fix"},
		{Name: "type::analysis", Color: "006b75", Description: "Alfred stops after the plan"},
		{Name: "type::question", Color: "cc317c", Description: "Alfred answers the question in the thread"},
	}
}

// SyncLabels creates the labels of catalogue a project lacks and updates
// those whose colour or description differ (colours compare without '#' and
// case). It is idempotent: a second run creates and updates nothing. Labels
// outside the catalogue are left alone. The bot's catalogue is bot.Labels,
// made from its lifecycle table.
func SyncLabels(ctx context.Context, f Forge, p Project, catalogue []Label) (created, updated []string, err error) {
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
		case !SameColor(got.Color, want.Color) || got.Description != want.Description:
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
