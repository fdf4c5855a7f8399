package main

import (
	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/views"
)

// projectSettings tells the project page the settings in force on a project,
// resolved as the engine resolves them (bot.Settings), and where each value
// comes from.
type projectSettings struct {
	store    *state.Store
	defaults map[string]string // the service configuration's (bot.Config.Defaults)
}

// Effective implements views.ProjectSettings.
func (s projectSettings) Effective(p forges.Project) ([]views.Setting, error) {
	resolve := bot.Settings{Overrides: bot.StoreOverrides{Store: s.store}, Defaults: s.defaults}
	project := bot.Scope{Forge: p.Forge, Owner: p.Owner, Project: p.Name}
	var out []views.Setting
	for _, key := range bot.SettingKeys() {
		v, err := resolve.Value(project, key)
		if err != nil {
			return out, err
		}
		out = append(out, views.Setting{Key: key, Value: v, Help: bot.Catalogue[key].Help, Source: resolve.Source(project, key)})
	}
	return out, nil
}
