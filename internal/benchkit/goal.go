package benchkit

import "fmt"

// Verdict is a goal's outcome.
type Verdict string

const (
	Met          Verdict = "met"
	NotMet       Verdict = "not met"
	NotEvaluated Verdict = "not evaluated" // the figures it needs were not measured
	Undetermined Verdict = "undetermined"  // measured, but the figures cannot decide it
	Reported     Verdict = ""              // a figure stated beside the goals, without a verdict
)

// Goal is one goal and how the run did against it.
type Goal struct {
	// Goal states it ("p99 added <= 0.5 ms at 1000 req/s").
	Goal string `json:"goal"`
	// Measured is the figures it was judged on.
	Measured string  `json:"measured,omitempty"`
	Verdict  Verdict `json:"verdict,omitempty"`
	// Note says why it was not evaluated or is undetermined, or what to do about it.
	Note string `json:"note,omitempty"`
}

// Check is goal judged on measured: met when ok.
func Check(goal string, ok bool, measured string) Goal {
	v := NotMet
	if ok {
		v = Met
	}
	return Goal{Goal: goal, Measured: measured, Verdict: v}
}

// Skip is a goal that could not be evaluated, and why.
func Skip(goal, why string) Goal { return Goal{Goal: goal, Verdict: NotEvaluated, Note: why} }

// Report is a figure stated among the goals without a verdict.
func Report(what, measured string) Goal { return Goal{Goal: what, Measured: measured} }

// Line renders the goal as one line of Markdown: "goal: measured: **verdict** (note)".
func (g Goal) Line() string {
	s := g.Goal
	if g.Measured != "" {
		s += ": " + g.Measured
	}
	if g.Verdict != Reported {
		s += fmt.Sprintf(": **%s**", g.Verdict)
	}
	if g.Note != "" {
		s += " (" + g.Note + ")"
	}
	return s
}

// AllMet says whether every goal with a verdict was met (goals not evaluated or undetermined are
// not met).
func AllMet(goals []Goal) bool {
	for _, g := range goals {
		if g.Verdict != Reported && g.Verdict != Met {
			return false
		}
	}
	return true
}
