package report

import "github.com/continuum-project/continuum/internal/results"

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
