// Package views owns Alfred's HTTP surface for people and probes: the health
// endpoints, the home page, and the run, mailbox and agents pages rendered from
// embedded html/templates, with a small JSON API for the same data.
package views
