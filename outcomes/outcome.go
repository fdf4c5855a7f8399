package outcomes

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// End is how a mailbox's work ended, or where it stands while it has not.
type End string

// The ends.
const (
	// EndOpen: still worked on, or waiting for a person or for CI, with
	// activity more recent than the abandon threshold.
	EndOpen End = "open"
	// EndMerged: its merge request was merged.
	EndMerged End = "merged"
	// EndClosed: the issue or its merge request was closed without a merge.
	EndClosed End = "closed_unmerged"
	// EndBlocked: Alfred gave up; a person's label would unblock it.
	EndBlocked End = "blocked"
	// EndPaused: it reached its cost budget.
	EndPaused End = "paused"
	// EndAbandoned: not done, no run going, and nothing happened for the
	// abandon threshold (Outcome.Status says where it was left).
	EndAbandoned End = "abandoned"
	// EndDelivered: done without a merge request because its flow ends at
	// the plan (type::analysis) or the answer (type::question).
	EndDelivered End = "delivered"
	// EndUnrecorded: done before the mailbox recorded how (state.MailboxEnd):
	// merged or closed, the records cannot tell.
	EndUnrecorded End = "done_unrecorded"
)

// Finished tells whether the end is final: merged, closed, delivered or
// done without a record of how.
func (e End) Finished() bool {
	return e == EndMerged || e == EndClosed || e == EndDelivered || e == EndUnrecorded
}

// Source says where a spend's tokens were counted.
type Source string

// Where tokens were counted.
const (
	SourceNone    Source = "none"    // no run used a token
	SourceGateway Source = "gateway" // every run's tokens as the model gateway counted them (sealed runs)
	SourceCLI     Source = "cli"     // every run's tokens as its CLI reported them
	SourceMixed   Source = "mixed"   // some runs each way: GatewayRuns and CLIRuns say how many
)

// Spend is what runs used: their tokens, each run's as the gateway counted
// them when it counted any, else as the CLI reported them, and the dollars
// the CLIs reported (Alfred keeps no price table).
type Spend struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	// GatewayRuns and CLIRuns count the runs whose tokens came from the
	// gateway and from the CLI; a run that used none counts in neither.
	GatewayRuns int `json:"gateway_runs"`
	CLIRuns     int `json:"cli_runs"`
	// UnpricedRuns counts the runs that used tokens with no dollar figure:
	// USD is then a lower bound.
	UnpricedRuns int `json:"unpriced_runs"`
}

// Tokens is the input and output tokens together.
func (s Spend) Tokens() int64 { return addTokens(s.InputTokens, s.OutputTokens) }

// addTokens adds two counts at or over zero, stopping at the largest
// int64 rather than wrapping to a negative.
func addTokens(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// addUSD adds two finite amounts at or over zero, stopping at the largest
// float64 rather than reaching infinity.
func addUSD(a, b float64) float64 { return min(a+b, math.MaxFloat64) }

// Source says where the tokens were counted.
func (s Spend) Source() Source {
	switch {
	case s.GatewayRuns > 0 && s.CLIRuns > 0:
		return SourceMixed
	case s.GatewayRuns > 0:
		return SourceGateway
	case s.CLIRuns > 0:
		return SourceCLI
	}
	return SourceNone
}

// MarshalJSON writes the spend with its source ("source": Source()).
func (s Spend) MarshalJSON() ([]byte, error) {
	type fields Spend // without this method
	b, err := json.Marshal(struct {
		fields
		Source Source `json:"source"`
	}{fields(s), s.Source()})
	if err != nil {
		return nil, fmt.Errorf("spend: %w", err)
	}
	return b, nil
}

// Priced tells whether USD covers every run that used tokens.
func (s Spend) Priced() bool { return s.UnpricedRuns == 0 }

// Add sums two spends.
func (s Spend) Add(o Spend) Spend {
	return Spend{
		InputTokens: addTokens(s.InputTokens, o.InputTokens), OutputTokens: addTokens(s.OutputTokens, o.OutputTokens), USD: addUSD(s.USD, o.USD),
		GatewayRuns: s.GatewayRuns + o.GatewayRuns, CLIRuns: s.CLIRuns + o.CLIRuns, UnpricedRuns: s.UnpricedRuns + o.UnpricedRuns,
	}
}

// Milestone is a moment of the mailbox's work: when it was reached and how
// long after the assignment.
type Milestone struct {
	// At is when it was reached; zero when it was not (Reached).
	At time.Time `json:"at,omitzero"`
	// After is the time from the assignment; nil when not reached, or when
	// the assignment's time is unknown or comes after At (Problems says so).
	After *time.Duration `json:"after,omitempty"`
	// Derived says At was read off the runs or the mailbox's last update,
	// for a record written before the mailbox kept this moment itself.
	Derived bool `json:"derived,omitempty"`
}

// Reached tells whether the milestone was reached.
func (m Milestone) Reached() bool { return !m.At.IsZero() }

// Rounds counts the loops of a merge request: each CI-fix, review-fix or
// conflict-resolution run started for a new reason, not counting the
// automatic retries of a failed run, a run started again after the bot
// stopped, a conflict run that found nothing to resolve, nor a run that did
// not start because the validated plan changed.
type Rounds struct {
	CIFix     int `json:"ci_fix"`
	ReviewFix int `json:"review_fix"`
	Conflict  int `json:"conflict"`
}

// Agent is an adapter and the model it was asked for ("" is the CLI's own
// default model, which the records do not name).
type Agent struct {
	Adapter string `json:"adapter"`
	Model   string `json:"model"`
}

// Phase is what the runs of one phase used: how many, with which agents
// (in the order first used) and at what spend.
type Phase struct {
	Phase  string  `json:"phase"`
	Runs   int     `json:"runs"`
	Agents []Agent `json:"agents"`
	Spend  Spend   `json:"spend"`
}

// Outcome is what Alfred's work on one mailbox came to.
type Outcome struct {
	MailboxID string     `json:"mailbox_id"`
	Forge     string     `json:"forge"`
	Owner     string     `json:"owner"`
	Project   string     `json:"project"`
	Kind      state.Kind `json:"kind"`
	IID       int64      `json:"iid"`
	// Flow is the type label's flow: "task", "analysis" or "question".
	Flow string `json:"flow,omitempty"`
	// Status is the mailbox's status (for EndAbandoned: where it was left).
	Status string `json:"status"`

	// AssignedAt is when the bot took the issue (the mailbox's creation);
	// zero when unknown.
	AssignedAt time.Time `json:"assigned_at,omitzero"`
	// Plan is the first plan posted; PullRequest the bot's merge request
	// found or opened; Finished the end, for a finished End.
	Plan        Milestone `json:"plan"`
	PullRequest Milestone `json:"pull_request"`
	Finished    Milestone `json:"finished"`

	End End `json:"end"`
	// By is who merged or closed it (state.MailboxEnd.By): as the forge's
	// event named them, or its API for a merge the bot read; "" when
	// neither did.
	By string `json:"by,omitempty"`
	// LastActivity is the latest time of the mailbox and its runs; Idle the
	// time since, at now, for a mailbox not finished (nil when finished or
	// when now is unknown).
	LastActivity time.Time      `json:"last_activity,omitzero"`
	Idle         *time.Duration `json:"idle,omitempty"`

	// Runs counts every run, FailedRuns those that failed or timed out,
	// StalledRuns those the engine stopped because their CLI stalled
	// (state.Run.Stalled; counted in FailedRuns too when their status
	// says failed), Retries those that retried a failed run.
	Runs        int    `json:"runs"`
	FailedRuns  int    `json:"failed_runs"`
	StalledRuns int    `json:"stalled_runs"`
	Retries     int    `json:"retries"`
	Rounds      Rounds `json:"rounds"`
	Spend       Spend  `json:"spend"`
	// Phases are the phases that ran, in the lifecycle's order (a phase
	// these records do not know comes last, by name).
	Phases []Phase `json:"phases"`
	Trial  string  `json:"trial,omitempty"` // the arm of the project's agent trial the issue was given (state.Trial.Arm, CompareTrial); "" outside a trial

	// Problems are what the records lacked or contradicted, one sentence
	// each; the figures leave out what a problem names.
	Problems []string `json:"problems,omitempty"`
}
