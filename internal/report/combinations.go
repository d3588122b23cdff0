package report

import (
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/results"
)

// Combination is one sweep combination of a results directory (a group of summary.json): the
// labels of its swept parameters, its metrics over its repeats, and its runs. Systems' sections
// build their per-combination tables from these.
type Combination struct {
	Params  []string // one label per swept parameter, in the order Combinations returns them
	Metrics map[string]map[string]results.Aggregate
	Runs    []*Run
}

// Combinations returns the results' combinations and the swept parameters (SweptParams).
func Combinations(res *Results) ([]Combination, []string) {
	byID := map[string]*Run{}
	for _, r := range res.Runs {
		byID[r.ID] = r
	}
	swept := SweptParams(res.Summary.Groups)
	out := make([]Combination, 0, len(res.Summary.Groups))
	for _, g := range res.Summary.Groups {
		c := Combination{Metrics: g.Metrics}
		for _, p := range swept {
			c.Params = append(c.Params, results.Label(g.Params, g.Labels, p))
		}
		for _, id := range g.Runs {
			if r := byID[id]; r != nil {
				c.Runs = append(c.Runs, r)
			}
		}
		out = append(out, c)
	}
	return out, swept
}

// ParamColumns are table columns naming the swept parameters: the last element of each path
// as the header, the whole path as the tooltip.
func ParamColumns(swept []string) []Column {
	var cols []Column
	for _, p := range swept {
		cols = append(cols, Column{Header: p[strings.LastIndex(p, ".")+1:], Title: p})
	}
	return cols
}

// MetricSuffixes lists X of the metrics named prefix+X in any combination, sorted (the
// instances a kind reported metrics for, e.g. "pace/" gives the PACE instances).
func MetricSuffixes(groups []Combination, prefix string) []string {
	seen := map[string]bool{}
	for _, g := range groups {
		for name := range g.Metrics {
			if x, ok := strings.CutPrefix(name, prefix); ok {
				seen[x] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for x := range seen {
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}
