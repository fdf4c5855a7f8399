package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alchemic-studio/alfred/outcomes"
)

// Result is one case replayed with one adapter.
type Result struct {
	Case    string `json:"case"`
	Adapter string `json:"adapter"`
	Model   string `json:"model,omitempty"`
	// Repository is the fresh repository (owner/name), Issue its issue.
	Repository string `json:"repository,omitempty"`
	Issue      int64  `json:"issue,omitempty"`
	IssueURL   string `json:"issue_url,omitempty"`
	// Status is the mailbox's status at the end of the wait; PullRequest
	// and Branch the bot's pull request and its branch (0 and "" without).
	Status      string       `json:"status"`
	PullRequest int64        `json:"pull_request,omitempty"`
	Branch      string       `json:"branch,omitempty"`
	Check       *CheckResult `json:"check,omitempty"`
	Solved      bool         `json:"solved"`
	// Error says what stopped the case (its set-up, the time limit, the
	// check's sandbox); empty when it went to its end.
	Error   string           `json:"error,omitempty"`
	Wall    time.Duration    `json:"wall"`
	Outcome outcomes.Outcome `json:"outcome"`
}

// Adapter is the figures of one adapter and model over the corpus.
type Adapter struct {
	Adapter string `json:"adapter"`
	Model   string `json:"model,omitempty"`
	Cases   int    `json:"cases"`
	Solved  int    `json:"solved"`
	// Summary is outcomes.Summarize of the cases' outcomes, a solved case
	// counting as merged and a checked, unsolved one as closed unmerged.
	Summary outcomes.Summary `json:"summary"`
	// Tokens and USD are the spend of every case (Summary.Spend); Wall the
	// sum of the cases' wall times.
	Tokens int64         `json:"tokens"`
	USD    float64       `json:"usd"`
	Wall   time.Duration `json:"wall"`
}

// Report is what a replay came to: per adapter, then per case.
type Report struct {
	Adapters []Adapter     `json:"adapters"`
	Results  []Result      `json:"results"`
	Wall     time.Duration `json:"wall"`
}

// Build makes the report of results (model is what every adapter was
// asked for), in the adapters' order of first appearance.
func Build(results []Result, model string, wall time.Duration) Report {
	rep := Report{Results: results, Wall: wall}
	var order []string
	for _, r := range results {
		if !slices.Contains(order, r.Adapter) {
			order = append(order, r.Adapter)
		}
	}
	for _, a := range order {
		ad := Adapter{Adapter: a, Model: model}
		var list []outcomes.Outcome
		for _, r := range results {
			if r.Adapter != a {
				continue
			}
			ad.Cases++
			if r.Solved {
				ad.Solved++
			}
			ad.Wall += r.Wall
			list = append(list, r.Outcome)
		}
		ad.Summary = outcomes.Summarize(list)
		ad.Tokens, ad.USD = ad.Summary.Spend.Tokens(), ad.Summary.Spend.USD
		rep.Adapters = append(rep.Adapters, ad)
	}
	return rep
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("replay report: %w", err)
	}
	return nil
}

// WriteText writes the report as two tables: the adapters, then the cases.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADAPTER\tMODEL\tCASES\tSOLVED\tMERGE RATE\tTO PR (MEDIAN)\tRUNS\tFAILED\tSTALLED\tTOKENS\tUSD\tWALL")
	for _, a := range r.Adapters {
		s := a.Summary
		rate := "-"
		if s.MergeRate != nil {
			rate = s.MergeRate.String()
		}
		toPR := "-"
		if s.ToPullRequest != nil {
			toPR = s.ToPullRequest.Median.Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%.4f\t%s\n", a.Adapter, cmp.Or(a.Model, "-"), a.Cases, a.Solved,
			rate, toPR, s.Runs, s.FailedRuns, s.StalledRuns, a.Tokens, a.USD, a.Wall.Round(time.Second))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CASE\tADAPTER\tSTATUS\tPULL REQUEST\tCHECK\tSOLVED\tWALL\tERROR")
	for _, c := range r.Results {
		pr, chk := "-", "-"
		if c.PullRequest != 0 {
			pr = "#" + strconv.FormatInt(c.PullRequest, 10)
		}
		if c.Check != nil {
			chk = string(c.Check.Outcome)
			if c.Check.Outcome == "exited" {
				chk = "exit " + strconv.Itoa(c.Check.ExitCode)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\n", c.Case, c.Adapter, cmp.Or(c.Status, "-"), pr, chk, c.Solved,
			c.Wall.Round(time.Second), cmp.Or(oneLine(c.Error, 120), "-"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("replay report: %w", err)
	}
	return nil
}

// oneLine is s on one line (its white space runs made single spaces), cut
// to n bytes, for a cell of the table.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
