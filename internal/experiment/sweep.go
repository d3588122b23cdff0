package experiment

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
)

// MaxRuns bounds the runs one scenario expands to; a sweep typo (a list of 1000 values twice)
// should fail at load, not after a day of runs.
const MaxRuns = 10000

// Run is one execution of a scenario: one combination of sweep values, one repeat.
type Run struct {
	ID string // "001", "002", ... in execution order
	// Params maps each sweep path to its value in this run, as written in the scenario.
	Params map[string]string
	// Labels maps a swept path to the short name of its value in this run, where the value is
	// too long to name it (a component list): given in the scenario's sweep_labels or derived
	// from what differs between the path's values (see sweepLabels).
	Labels map[string]string
	Repeat int // 1-based
	// Scenario is a fully resolved copy with the sweep values applied and validated. Its Sweep is
	// empty and Repeats is 1, so that writing it to the run's directory and loading it again
	// reproduces exactly this run; Seed is the scenario's seed plus the run's index (0 for "001"),
	// so repeats differ from each other yet every run is reproducible.
	Scenario *Scenario
}

// Expand returns the runs of the scenario: the cartesian product of the sweep values, paths sorted
// (the last path varies fastest), each combination repeated Repeats times. Without a sweep it is
// Repeats runs of the scenario itself. s must have been loaded (LoadScenario); combinations that
// are invalid together (warmup swept past duration) are reported, naming the run's parameters.
func (s *Scenario) Expand() ([]Run, error) {
	r, err := s.resolved()
	if err != nil {
		return nil, err
	}
	r.Sweep, r.SweepLabels = nil, nil
	var base yaml.Node
	if err := base.Encode(r); err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	deleteKey(&base, "repeats")

	paths := make([]string, 0, len(s.Sweep))
	total := 1
	for p, vs := range s.Sweep {
		paths = append(paths, p)
		total *= len(vs)
		if total > MaxRuns || len(vs) == 0 {
			break
		}
	}
	sort.Strings(paths)
	repeats := max(s.Repeats, 1)
	if total == 0 || total > MaxRuns || total*repeats > MaxRuns {
		return nil, fmt.Errorf("the sweep expands to %d combinations x %d repeats; want 1 to %d runs", total, repeats, MaxRuns)
	}

	labels := s.sweepLabels()
	var runs []Run
	var errs []string
	idx := make([]int, len(paths)) // current combination, odometer-style
	for c := 0; c < total; c++ {
		params, plabels := map[string]string{}, map[string]string{}
		d := &doc{file: s.File, root: spec.CopyNode(&base)}
		var failed bool
		for j, p := range paths {
			v := &s.Sweep[p][idx[j]]
			params[p] = valueText(v)
			if l := labels[p]; l != nil {
				plabels[p] = l[idx[j]]
			}
			if err := d.set(p, spec.CopyNode(v), s.File); err != nil {
				errs = append(errs, fmt.Sprintf("sweep %s=%s: %v", p, params[p], err))
				failed = true
			}
		}
		for rep := 1; rep <= repeats && !failed; rep++ {
			id := fmt.Sprintf("%03d", len(runs)+1)
			sc, err := d.clone().resolve()
			if err != nil {
				errs = append(errs, fmt.Sprintf("run %s (%s): %v", id, paramText(paths, params, plabels), err))
				break
			}
			sc.File, sc.TopologyFile = s.File, s.TopologyFile
			sc.Seed = s.Seed + int64(len(runs))
			runs = append(runs, Run{ID: id, Params: params, Labels: plabels, Repeat: rep, Scenario: sc})
		}
		for j := len(idx) - 1; j >= 0; j-- {
			if idx[j]++; idx[j] < len(s.Sweep[paths[j]]) {
				break
			}
			idx[j] = 0
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return runs, nil
}

// valueText is a sweep value as written: the scalar itself, or flow YAML for lists and mappings.
func valueText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	c := spec.CopyNode(n)
	walkNodes(c, func(x *yaml.Node) { x.Style = yaml.FlowStyle })
	out, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprint(n.Value)
	}
	return strings.TrimSpace(string(out))
}

// paramText names a run's sweep values, by their labels where they have one.
func paramText(paths []string, params, labels map[string]string) string {
	parts := make([]string, len(paths))
	for i, p := range paths {
		v := params[p]
		if l, ok := labels[p]; ok {
			v = l
		}
		parts[i] = p + "=" + v
	}
	return strings.Join(parts, ", ")
}
