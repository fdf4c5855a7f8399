package clitest

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// Case is a finished process and what a CLI must make of it.
type Case[T comparable] struct {
	Name string
	Res  *sandbox.Result
	Want T
}

// Parsed is a case of a CLI's Parse: the Output, compared whole.
type Parsed = Case[agents.Output]

// Classified is a case of a CLI's Classify: a resume attempt that did not
// succeed, and the reason.
type Classified = Case[agents.FallbackReason]

// CheckParse runs cli.Parse on each case.
func CheckParse(t *testing.T, cli agents.CLI, cases []Parsed) { check(t, "Parse", cli.Parse, cases) }

// CheckClassify runs cli.Classify on each case.
func CheckClassify(t *testing.T, cli agents.CLI, cases []Classified) {
	check(t, "Classify", cli.Classify, cases)
}

func check[T comparable](t *testing.T, name string, fn func(*sandbox.Result) T, cases []Case[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if got := fn(c.Res); got != c.Want {
				t.Errorf("%s = %+v\nwant %+v\n(exit %d, stdout %q, stderr %q)", name, got, c.Want, c.Res.ExitCode, c.Res.Stdout, c.Res.Stderr)
			}
		})
	}
}
