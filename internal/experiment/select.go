package experiment

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RunOverhead is the wall time a run takes beyond its scenario's duration: bringing its platform
// up, starting and stopping the instances and tearing down (measured at 1 to 3 s on the kv and
// quickstart scenarios of a 2-core host). Estimates only; a run's own duration dominates.
const RunOverhead = 3 * time.Second

// Selection picks some runs of a swept scenario, to try one combination without running all.
// The zero value selects every run. Runs keep their ID and seed from the whole sweep, so a run
// tried alone is the same run as in a full experiment.
type Selection struct {
	// Run is a run's number (1 for run 001: the IDs results and errors name); 0 selects all.
	Run int
	// Only selects the combinations (with all their repeats) whose sweep values match every one
	// of its comma-separated terms: "VALUE" matches a value or label of any swept path,
	// "PATH=VALUE" one of that path (the full path or its last segment), e.g.
	// "components=etcd" or "etcd". Empty selects all.
	Only string
}

// apply returns the runs s selects, or an error naming the combinations there are.
func (s Selection) apply(runs []Run) ([]Run, error) {
	out := runs
	if s.Run < 0 {
		return nil, fmt.Errorf("--run %d: want a run number from 1 to %d", s.Run, len(runs))
	}
	if s.Run > 0 {
		if s.Run > len(runs) {
			return nil, fmt.Errorf("--run %d: the scenario has %d run(s); want 1 to %d:\n%s", s.Run, len(runs), len(runs), listRuns(runs))
		}
		out = runs[s.Run-1 : s.Run]
	}
	if strings.TrimSpace(s.Only) == "" {
		return out, nil
	}
	if len(runs) > 0 && len(runs[0].Params) == 0 {
		return nil, fmt.Errorf("--only %q: the scenario has no sweep, so there is no combination to pick", s.Only)
	}
	var terms [][2]string // path (may be empty), value
	for _, t := range strings.Split(s.Only, ",") {
		t = strings.TrimSpace(t)
		path, value, ok := strings.Cut(t, "=")
		if !ok {
			path, value = "", t
		}
		if strings.TrimSpace(value) == "" {
			return nil, fmt.Errorf("--only %q: term %q has no value; want VALUE or PATH=VALUE, comma-separated", s.Only, t)
		}
		terms = append(terms, [2]string{strings.TrimSpace(path), strings.TrimSpace(value)})
	}
	var sel []Run
	for _, r := range out {
		if matchesAll(r, terms) {
			sel = append(sel, r)
		}
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("--only %q matches no run; the runs are:\n%s", s.Only, listRuns(runs))
	}
	return sel, nil
}

// matchesAll reports whether every term names one of r's sweep values.
func matchesAll(r Run, terms [][2]string) bool {
	for _, t := range terms {
		found := false
		for p, v := range r.Params {
			if t[0] != "" && t[0] != p && t[0] != lastSegment(p) {
				continue
			}
			if t[1] == v || (r.Labels[p] != "" && t[1] == r.Labels[p]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// listRuns names each run as --run and --only take it, one a line.
func listRuns(runs []Run) string {
	var b strings.Builder
	for _, r := range runs {
		n, _ := strconv.Atoi(r.ID)
		fmt.Fprintf(&b, "  --run %d: %s", n, paramText(sortedParams(r.Params), r.Params, r.Labels))
		if len(r.Params) == 0 {
			fmt.Fprintf(&b, "repeat %d", r.Repeat)
		} else if r.Repeat > 1 {
			fmt.Fprintf(&b, " (repeat %d)", r.Repeat)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// wallTime estimates how long runs take end to end: each run's duration plus RunOverhead.
func wallTime(runs []Run) time.Duration {
	var d time.Duration
	for _, r := range runs {
		d += r.Scenario.Duration.Duration + RunOverhead
	}
	return d
}
