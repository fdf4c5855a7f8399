package main

import (
	"io"
	"strings"

	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges/setup"
)

// `alfred config reference`.

// configReference is `alfred config reference`: the process configuration
// and the project settings, as the README's two Markdown tables.
func configReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("## Process configuration\n\nFlags of `alfred serve`, `ALFRED_*` variables and lines of the `-config` file.\n\n")
	if err := config.Reference(&b, setup.ConfigKinds()); err != nil {
		return err
	}
	b.WriteString("\n## Project settings\n\nSet per organization or project with `alfred settings set`, stored in the state branch; a project's value wins over its organization's, which wins over the default.\n\n")
	if err := bot.Reference(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
