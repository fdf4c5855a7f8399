package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
)

// `alfred labels sync`, and the bot's label catalogue per forge.

// labelCatalogue is the bot's labels on forge fc, its status labels in the
// form its ALFRED_STATUS_LABELS chose.
func labelCatalogue(fc config.Forge) []forges.Label { return lifecycle.LabelsWith(statusPrefix(fc)) }

// statusPrefix is the prefix of the status labels on forge fc.
func statusPrefix(fc config.Forge) string {
	return forges.StatusPrefixOf(forges.Kind(fc.Kind), fc.StatusLabels != "colons")
}

// labelsSync is `alfred labels sync -project OWNER/NAME`.
func labelsSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var project string
	c, rest, err := load("labels sync", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&project, "project", "", "project OWNER/NAME whose labels to sync")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 || project == "" {
		return errUsage("labels sync takes -project OWNER/NAME")
	}
	p, fc, err := parseProject(c, project)
	if err != nil {
		return err
	}
	f, _, err := newForge(c, fc, nil)
	if err != nil {
		return err
	}
	catalogue := labelCatalogue(fc)
	created, updated, err := forges.SyncLabels(ctx, f, p, catalogue)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d labels created, %d updated, %d already right\n", p.FullName(),
		len(created), len(updated), len(catalogue)-len(created)-len(updated))
	for _, l := range created {
		fmt.Fprintf(stdout, "  created %s\n", l)
	}
	for _, l := range updated {
		fmt.Fprintf(stdout, "  updated %s\n", l)
	}
	return nil
}
