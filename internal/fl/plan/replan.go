package plan

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Change is what a reconfiguration changes, for the orchestrator to touch only that.
type Change struct {
	// Reoptimized is false when the old clusters were kept, minus the clients that left, plus
	// the new ones (and the clients of a local aggregator that left), each placed by the
	// strategy's rule.
	Reoptimized bool `json:"reoptimized"`
	// Moved maps every client whose aggregator changed to [old, new] ("" = joined or left).
	Moved map[string][2]string `json:"moved,omitempty"`
	// Aggregators are the local aggregators (of the old or the new configuration) whose client
	// set, epochs or local rounds changed, sorted: the ones to restart or reconfigure.
	Aggregators []string `json:"aggregators,omitempty"`
	// GlobalChanged: another global aggregator, other children of it (local aggregators, or
	// the clients of a centralized configuration), or other epochs of a centralized one.
	GlobalChanged bool `json:"global_changed"`
	// Reason says what was decided and why, for people.
	Reason string `json:"reason"`
}

// Replan is the reconfiguration decision after nodes left or joined: nodes is the node set
// now. It builds two candidates, the old configuration kept with the minimal change (clients
// that left are dropped; clients that joined, and those of a local aggregator that left, go
// to the cluster where they lower the KLD most among the smallest clusters, so the balance
// holds; for min-cost, to their cheapest aggregator with room; epochs and local rounds follow
// the budget rule again) and the full re-optimisation (Plan), and re-optimises only if it is
// worth its moves:
//
//	min-kld:  KLD(kept) - KLD(full) >= Options.MinGain * extra
//	min-cost: costPerEpoch(kept) - costPerEpoch(full) >= Options.MoveCost * extra
//
// where extra is how many more clients (of those staying) the full re-optimisation moves than
// the kept one; with no extra moves it is taken whenever it is no worse. A change of strategy
// or of the global aggregator, or no local aggregator of the old configuration left, forces
// the re-optimisation. Nodes of old that are gone may still be named in costs.
func Replan(old Config, nodes []Node, s Strategy, b Budget, opt Options) (Config, Change, error) {
	known := map[string]bool{old.Global: true}
	for _, c := range old.AllClients() {
		known[c] = true
	}
	for _, a := range old.Aggregators() {
		known[a] = true
	}
	full, err := plan(nodes, s, b, opt, known)
	if err != nil {
		return Config{}, Change{}, err
	}
	t, err := classify(nodes, opt, known)
	if err != nil {
		return Config{}, Change{}, err
	}
	forced := func(why string) (Config, Change, error) {
		ch := diff(old, full)
		ch.Reoptimized, ch.Reason = true, why
		return full, ch, nil
	}
	switch {
	case old.Global == "":
		return forced("no previous configuration")
	case old.Strategy != s:
		return forced(fmt.Sprintf("strategy changed from %s to %s", old.Strategy, s))
	case old.Global != full.Global:
		return forced(fmt.Sprintf("global aggregator changed from %s to %s", old.Global, full.Global))
	case full.Centralized():
		ch := diff(old, full)
		ch.Reoptimized = !old.Centralized()
		ch.Reason = fmt.Sprintf("centralized: %s", membership(ch))
		if !old.Centralized() {
			ch.Reason = "no local aggregator left: centralized"
		}
		return full, ch, nil
	case old.Centralized():
		return forced("local aggregators appeared: hierarchical")
	}
	kept, err := t.keep(old, s, b, opt)
	if err != nil {
		return forced(fmt.Sprintf("the old clusters cannot be kept (%v)", err))
	}
	oldParent := old.Parents()
	moves := func(c Config) int {
		n := 0
		for id, p := range c.Parents() {
			if op := oldParent[id]; op != "" && op != p {
				n++
			}
		}
		return n
	}
	mk, mf := moves(kept), moves(full)
	extra := mf - mk
	var gain, unit float64
	var what, unitName string
	if s == MinCost {
		gain, unit, what, unitName = kept.CostPerEpoch-full.CostPerEpoch, opt.MoveCost, "cost per epoch", "MoveCost"
	} else {
		gain, unit, what, unitName = kept.KLD-full.KLD, opt.MinGain, "mean KLD", "MinGain"
	}
	const tol = 1e-12
	reopt := false
	switch {
	case extra <= 0:
		reopt = gain > tol || (math.Abs(gain) <= tol && full.CostPerEpoch < kept.CostPerEpoch)
	default:
		reopt = gain > tol && gain >= unit*float64(extra)
	}
	var out Config
	if reopt {
		out = full
	} else {
		out = kept
	}
	ch := diff(old, out)
	ch.Reoptimized = reopt
	verdict := "kept the clusters"
	if reopt {
		verdict = "re-optimised"
	}
	ch.Reason = fmt.Sprintf("%s (%s): %s kept %.6g vs re-optimised %.6g (gain %.6g) for %d extra moved client(s) beyond the %d forced; %s %g each",
		verdict, membership(ch), what, metric(kept, s), metric(full, s), gain, max(extra, 0), mk, unitName, unit)
	return out, ch, nil
}

func metric(c Config, s Strategy) float64 {
	if s == MinCost {
		return c.CostPerEpoch
	}
	return c.KLD
}

func membership(ch Change) string {
	var joined, left []string
	for id, m := range ch.Moved {
		switch {
		case m[0] == "":
			joined = append(joined, id)
		case m[1] == "":
			left = append(left, id)
		}
	}
	sort.Strings(joined)
	sort.Strings(left)
	var parts []string
	if len(left) > 0 {
		parts = append(parts, "left: "+strings.Join(left, " "))
	}
	if len(joined) > 0 {
		parts = append(parts, "joined: "+strings.Join(joined, " "))
	}
	if len(parts) == 0 {
		return "no client joined or left"
	}
	return strings.Join(parts, "; ")
}

// keep is the old configuration with the minimal change for the node set t.
func (t *topo) keep(old Config, s Strategy, b Budget, opt Options) (Config, error) {
	present := map[string]bool{}
	for _, c := range t.clients {
		present[c] = true
	}
	laIndex := map[string]int{}
	for j, a := range t.las {
		laIndex[a] = j
	}
	byAgg := make([][]string, len(t.las))
	placed := map[string]bool{}
	kept := 0
	for _, cl := range old.Clusters {
		j, ok := laIndex[cl.Aggregator]
		if !ok {
			continue // its clients move
		}
		for _, c := range cl.Clients {
			if present[c] {
				byAgg[j] = append(byAgg[j], c)
				placed[c] = true
			}
		}
		if len(byAgg[j]) > 0 {
			kept++
		}
	}
	if kept == 0 {
		return Config{}, fmt.Errorf("none of the old local aggregators %s has a client left", strings.Join(old.Aggregators(), ", "))
	}
	var movers []string
	for _, c := range t.clients {
		if !placed[c] {
			movers = append(movers, c)
		}
	}
	in := t.instance(t.clients)
	idx := map[string]int{}
	for i, c := range t.clients {
		idx[c] = i
	}
	counts := make([][]float64, len(t.las))
	for j := range byAgg {
		counts[j] = make([]float64, in.classes)
		for _, c := range byAgg[j] {
			addTo(counts[j], in.x[idx[c]], 1)
		}
	}
	used := func(j int) bool { return len(byAgg[j]) > 0 }
	tmp := make([]float64, in.classes)
	delta := func(j int, c string, sign float64) float64 {
		copy(tmp, counts[j])
		addTo(tmp, in.x[idx[c]], sign)
		return in.kld(tmp) - in.kld(counts[j])
	}
	if s == MinCost {
		n := len(t.clients)
		capEach := (n+kept-1)/kept + max(opt.CostSlack, 0)
		for _, c := range movers {
			best, bestCost := -1, math.Inf(1)
			for j := range byAgg {
				if !used(j) || len(byAgg[j]) >= capEach {
					continue
				}
				if v, ok := t.cost(c, t.las[j]); ok && v < bestCost {
					best, bestCost = j, v
				}
			}
			if best < 0 {
				return Config{}, fmt.Errorf("client %s has no cost to a kept local aggregator with room", c)
			}
			byAgg[best] = append(byAgg[best], c)
		}
		return t.finish(s, byAgg, false, b)
	}
	for _, c := range movers {
		minSize := math.MaxInt
		for j := range byAgg {
			if used(j) {
				minSize = min(minSize, len(byAgg[j]))
			}
		}
		best, bestDelta := -1, math.Inf(1)
		for j := range byAgg {
			if !used(j) || len(byAgg[j]) != minSize {
				continue
			}
			if _, ok := t.cost(c, t.las[j]); !ok {
				continue
			}
			if d := delta(j, c, 1); d < bestDelta {
				best, bestDelta = j, d
			}
		}
		if best < 0 {
			return Config{}, fmt.Errorf("client %s has no cost to any of the smallest kept clusters' aggregators", c)
		}
		byAgg[best] = append(byAgg[best], c)
		addTo(counts[best], in.x[idx[c]], 1)
	}
	// Leavers may have unbalanced the clusters: move clients from a largest cluster to a
	// smallest, each time the move that raises the KLD sum least, until sizes differ by <= 1.
	for {
		lo, hi := math.MaxInt, 0
		for j := range byAgg {
			if used(j) {
				lo, hi = min(lo, len(byAgg[j])), max(hi, len(byAgg[j]))
			}
		}
		if hi-lo <= 1 {
			break
		}
		bf, bt, bc, bd := -1, -1, -1, math.Inf(1)
		for f := range byAgg {
			if len(byAgg[f]) != hi {
				continue
			}
			for to := range byAgg {
				if !used(to) || len(byAgg[to]) != lo {
					continue
				}
				for ci, c := range byAgg[f] {
					if _, ok := t.cost(c, t.las[to]); !ok {
						continue
					}
					if d := delta(f, c, -1) + delta(to, c, 1); d < bd {
						bf, bt, bc, bd = f, to, ci, d
					}
				}
			}
		}
		if bf < 0 {
			return Config{}, fmt.Errorf("cannot rebalance the kept clusters: missing costs")
		}
		c := byAgg[bf][bc]
		byAgg[bf] = slices.Delete(byAgg[bf], bc, bc+1)
		byAgg[bt] = append(byAgg[bt], c)
		addTo(counts[bf], in.x[idx[c]], -1)
		addTo(counts[bt], in.x[idx[c]], 1)
	}
	return t.finish(s, byAgg, false, b)
}

// diff is the change from old to cfg.
func diff(old, cfg Config) Change {
	ch := Change{Moved: map[string][2]string{}}
	op, np := old.Parents(), cfg.Parents()
	for id, p := range op {
		if np[id] != p {
			ch.Moved[id] = [2]string{p, np[id]}
		}
	}
	for id, p := range np {
		if _, ok := op[id]; !ok {
			ch.Moved[id] = [2]string{"", p}
		}
	}
	members := func(c Config) map[string]string {
		m := map[string]string{}
		for _, cl := range c.Clusters {
			m[cl.Aggregator] = strings.Join(cl.Clients, ",")
		}
		return m
	}
	om, nm := members(old), members(cfg)
	rounds := old.Epochs != cfg.Epochs || old.LocalRounds != cfg.LocalRounds
	seen := map[string]bool{}
	for _, m := range []map[string]string{om, nm} {
		for a := range m {
			if seen[a] {
				continue
			}
			seen[a] = true
			o, inOld := om[a]
			n, inNew := nm[a]
			if !inOld || !inNew || o != n || rounds {
				ch.Aggregators = append(ch.Aggregators, a)
			}
		}
	}
	sort.Strings(ch.Aggregators)
	switch {
	case old.Global != cfg.Global || old.Centralized() != cfg.Centralized():
		ch.GlobalChanged = true
	case cfg.Centralized():
		ch.GlobalChanged = !slices.Equal(old.Clients, cfg.Clients) || rounds
	default:
		ch.GlobalChanged = !slices.Equal(old.Aggregators(), cfg.Aggregators())
	}
	return ch
}
