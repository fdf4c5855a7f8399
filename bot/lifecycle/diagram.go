package lifecycle

import (
	"fmt"
	"strings"
)

// Diagram renders the lifecycle table as the page docs/lifecycle.md: a
// Mermaid state diagram and the table itself, so the picture and the
// engine cannot disagree (TestLifecycleDiagram keeps the file in step).
func Diagram() string {
	var b strings.Builder
	b.WriteString("# The lifecycle of an issue\n\n")
	b.WriteString("Generated from `bot/lifecycle/table.go` by `go test ./bot/lifecycle -run TestLifecycleDiagram -update`: edit the\n")
	b.WriteString("table, not this page. The words are in [design.md](design.md).\n\n")
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	b.WriteString("    state \"any status\" as any\n")
	for _, t := range transitions {
		label := t.On
		if t.Run != "" {
			label += " / runs " + string(t.Run)
		}
		for _, from := range diagramFrom(t) {
			to := diagramState(t.To)
			if t.To == "" {
				to = from
			}
			fmt.Fprintf(&b, "    %s --> %s: %s\n", from, to, mermaidText(label))
		}
	}
	b.WriteString("    done --> [*]\n```\n\n")
	b.WriteString("| step | from | when | runs | to | bounded by |\n|---|---|---|---|---|---|\n")
	for _, t := range transitions {
		from := make([]string, 0, len(t.From))
		for _, s := range t.From {
			from = append(from, cell(s, "(new)"))
		}
		if len(from) == 0 {
			from = append(from, "any")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t.Step, strings.Join(from, ", "), t.On,
			orDash(string(t.Run)), cell(t.To, "(unchanged)"), orDash(string(t.Limit)))
	}
	writeDispatch(&b)
	b.WriteString("\n## Labels\n\n| label | what |\n|---|---|\n")
	for _, l := range Labels() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", l.Name, l.Description)
	}
	return b.String()
}

// writeDispatch writes the dispatch table: what each intent does, from
// which statuses, under which guards.
func writeDispatch(b *strings.Builder) {
	b.WriteString("\n## What each event does\n\nAn event becomes an intent (`Classify`); the engine takes the first row whose intent,\n")
	b.WriteString("status and guards match, and performs its effect. \"steers\": only people with write access.\n\n")
	b.WriteString("| intent | from | when | effect | step | steers |\n|---|---|---|---|---|---|\n")
	for _, r := range dispatch {
		from := make([]string, 0, len(r.From))
		for _, s := range r.From {
			from = append(from, cell(s, "(new)"))
		}
		if len(from) == 0 {
			from = append(from, "any")
		}
		when := make([]string, 0, len(r.Guards))
		for _, g := range r.Guards {
			when = append(when, g.Name)
		}
		steers := ""
		if Steers(r.On) {
			steers = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.On, strings.Join(from, ", "), orDash(strings.Join(when, "; ")),
			r.Effect, orDash(string(r.Step)), orDash(steers))
	}
}

func diagramFrom(t Transition) []string {
	if len(t.From) == 0 {
		return []string{"any"}
	}
	out := make([]string, len(t.From))
	for i, s := range t.From {
		out[i] = diagramState(s)
	}
	return out
}

// diagramState names a status in the diagram: a new mailbox is the start.
func diagramState(s Status) string {
	if s == statusNew {
		return "[*]"
	}
	return string(s)
}

func cell(s Status, none string) string {
	if s == "" {
		return none
	}
	return "`" + string(s) + "`"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// mermaidText writes a transition's words as Mermaid reads them: a colon
// or a semicolon as its entity code.
func mermaidText(s string) string {
	return strings.NewReplacer(":", "#58;", ";", "#59;").Replace(s)
}
