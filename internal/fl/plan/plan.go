package plan

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// maxTies bounds how many equal-KLD clusterings the exact search keeps for the cost tie-break
// (many only when clients have identical data, whose swaps then cost alike too).
const maxTies = 64

// topo is the node set sorted into roles.
type topo struct {
	global  string
	las     []string // local aggregators, sorted
	clients []string // sorted
	byID    map[string]*Node
	classes int
}

// classify sorts nodes into roles and checks what every strategy needs. Peers in known (nodes
// that left) may appear in costs; any other unknown peer is an error.
func classify(nodes []Node, opt Options, known map[string]bool) (*topo, error) {
	t := &topo{byID: map[string]*Node{}, classes: 10}
	if opt.Classes > 0 {
		t.classes = opt.Classes
	}
	var globals, aggs []string
	for i := range nodes {
		n := &nodes[i]
		if n.ID == "" {
			return nil, fmt.Errorf("node %d has an empty ID", i)
		}
		if _, dup := t.byID[n.ID]; dup {
			return nil, fmt.Errorf("node %s is listed twice", n.ID)
		}
		t.byID[n.ID] = n
		switch n.Role {
		case RoleClient:
			t.clients = append(t.clients, n.ID)
			for c := range n.Data {
				if c < 0 || c >= maxClass {
					return nil, fmt.Errorf("client %s: class %d: want an integer in [0, %d)", n.ID, c, maxClass)
				}
				if n.Data[c] < 0 {
					return nil, fmt.Errorf("client %s: %d samples of class %d: want >= 0", n.ID, n.Data[c], c)
				}
				if c >= t.classes {
					if opt.Classes > 0 {
						return nil, fmt.Errorf("client %s: class %d: the data set has %d classes (0..%d)", n.ID, c, opt.Classes, opt.Classes-1)
					}
					t.classes = c + 1
				}
			}
		case RoleAggregator:
			aggs = append(aggs, n.ID)
		case RoleGlobal:
			globals = append(globals, n.ID)
		default:
			return nil, fmt.Errorf("node %s: role %q: want client, aggregator or global", n.ID, n.Role)
		}
	}
	for _, n := range nodes {
		for _, peer := range sortedKeys(n.Cost) {
			c := n.Cost[peer]
			if _, ok := t.byID[peer]; !ok && !known[peer] {
				return nil, fmt.Errorf("node %s: cost to unknown node %s", n.ID, peer)
			}
			if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
				return nil, fmt.Errorf("node %s: cost %v to %s: want a number >= 0", n.ID, c, peer)
			}
		}
	}
	sort.Strings(t.clients)
	sort.Strings(aggs)
	switch {
	case len(globals) > 1:
		sort.Strings(globals)
		return nil, fmt.Errorf("more than one global aggregator: %s", strings.Join(globals, ", "))
	case len(globals) == 1:
		t.global, t.las = globals[0], aggs
	default:
		g, err := pickGlobal(t, aggs)
		if err != nil {
			return nil, err
		}
		t.global = g
		for _, a := range aggs {
			if a != g {
				t.las = append(t.las, a)
			}
		}
	}
	if len(t.clients) == 0 {
		return nil, fmt.Errorf("no clients: no node has role client (the global aggregator is %s)", t.global)
	}
	return t, nil
}

// pickGlobal chooses the global aggregator when no node has role global: the aggregator every
// other one has a cost to whose sum of those costs is least (ties: the first by ID).
func pickGlobal(t *topo, aggs []string) (string, error) {
	if len(aggs) == 0 {
		return "", errors.New("no global aggregator: no node has role global (or global_aggregator) or aggregator")
	}
	best, bestSum := "", math.Inf(1)
	for _, g := range aggs {
		sum, ok := 0.0, true
		for _, a := range aggs {
			if a == g {
				continue
			}
			c, has := t.byID[a].Cost[g]
			if !has {
				ok = false
				break
			}
			sum += c
		}
		if ok && sum < bestSum {
			best, bestSum = g, sum
		}
	}
	if best == "" {
		return "", fmt.Errorf("no global aggregator: no node has role global, and none of the aggregators %s is reachable (has a cost) from all the others", strings.Join(aggs, ", "))
	}
	return best, nil
}

func (t *topo) cost(from, to string) (float64, bool) {
	c, ok := t.byID[from].Cost[to]
	return c, ok
}

func (t *topo) needCost(from, to, what string) (float64, error) {
	c, ok := t.cost(from, to)
	if !ok {
		return 0, fmt.Errorf("%s %s has no communication cost to %s (give %s a comm/%s label, or %s:COST in its costs)", what, from, to, from, to, to)
	}
	return c, nil
}

func (t *topo) instance(clients []string) *instance {
	data := make([]map[int]int, len(clients))
	for i, c := range clients {
		data[i] = t.byID[c].Data
	}
	return newInstance(t.classes, data)
}

// Plan picks a configuration of nodes by strategy s under budget b.
//
// Errors name what is wrong: no global aggregator, no clients, a cost to an unknown node, a
// client without a cost to an aggregator it could be assigned to (every local aggregator for
// min-kld, the global one for centralized), a local aggregator without a cost to the global
// one, a min-kld client without data, a budget unreachable within its bounds. With no local
// aggregator, min-kld and min-cost give the centralized configuration (so does the seed).
func Plan(nodes []Node, s Strategy, b Budget, opt Options) (Config, error) {
	return plan(nodes, s, b, opt, nil)
}

func plan(nodes []Node, s Strategy, b Budget, opt Options, known map[string]bool) (Config, error) {
	if _, err := ParseStrategy(string(s)); err != nil {
		return Config{}, err
	}
	if err := b.Validate(); err != nil {
		return Config{}, err
	}
	t, err := classify(nodes, opt, known)
	if err != nil {
		return Config{}, err
	}
	if s == Centralized || len(t.las) == 0 {
		return t.centralized(b)
	}
	for _, a := range t.las {
		if _, err := t.needCost(a, t.global, "local aggregator"); err != nil {
			return Config{}, err
		}
	}
	var clusters [][]string
	exact := true
	switch s {
	case MinKLD:
		clusters, exact, err = t.minKLD(b, opt)
	case MinCost:
		clusters, err = t.minCost(opt)
	case LabelSorted:
		clusters = t.labelSorted(b)
	}
	if err != nil {
		return Config{}, err
	}
	return t.finish(s, clusters, exact, b)
}

func (t *topo) centralized(b Budget) (Config, error) {
	var local float64
	for _, c := range t.clients {
		cost, err := t.needCost(c, t.global, "client")
		if err != nil {
			return Config{}, err
		}
		local += cost * b.ModelMB
	}
	e, l, cpe, err := BudgetRule(0, local, b)
	if err != nil {
		return Config{}, fmt.Errorf("centralized: %w", err)
	}
	return Config{Strategy: Centralized, Global: t.global, Clients: append([]string(nil), t.clients...),
		Epochs: e, LocalRounds: l, CostPerEpoch: cpe, LocalCost: local, Exact: true}, nil
}

// minKLD returns the clusters indexed like t.las (nil for an aggregator left without one) and
// whether the clustering is exact.
func (t *topo) minKLD(b Budget, opt Options) ([][]string, bool, error) {
	for _, c := range t.clients {
		for _, a := range t.las {
			if _, err := t.needCost(c, a, "client"); err != nil {
				return nil, false, err
			}
		}
		if total(t.byID[c].Data) == 0 {
			return nil, false, fmt.Errorf("client %s has no data (data/<class> labels, or class:count in its data): min-kld needs every client's label distribution", c)
		}
	}
	n := len(t.clients)
	k := min(len(t.las), n)
	in := t.instance(t.clients)
	var candidates [][][]int
	exact := partitions(n, k) <= opt.exactLimit()
	if exact {
		candidates, _ = in.exact(k, maxTies)
	} else {
		restarts := opt.Restarts
		if restarts <= 0 {
			restarts = DefaultOptions().Restarts
		}
		candidates = [][][]int{in.heuristic(k, restarts, opt.Seed, opt.work())}
	}
	// Among equal-KLD clusterings the one whose assignment to aggregators costs least wins.
	var best [][]string
	bestCost := math.Inf(1)
	for _, cand := range candidates {
		named := make([][]string, len(cand))
		for j, cl := range cand {
			for _, i := range cl {
				named[j] = append(named[j], t.clients[i])
			}
		}
		placed, cost := t.assignClusters(named, b)
		if cost < bestCost-1e-9 {
			best, bestCost = placed, cost
		}
	}
	return best, exact, nil
}

// labelSorted sorts the clients by their classes (the smallest class first, then the next) and
// cuts them into balanced contiguous clusters, assigned to aggregators at minimal cost.
func (t *topo) labelSorted(b Budget) [][]string {
	key := func(id string) []int {
		var cs []int
		for c, n := range t.byID[id].Data {
			if n > 0 {
				cs = append(cs, c)
			}
		}
		sort.Ints(cs)
		return cs
	}
	ids := append([]string(nil), t.clients...)
	sort.SliceStable(ids, func(i, j int) bool {
		a, b := key(ids[i]), key(ids[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return ids[i] < ids[j]
	})
	k := min(len(t.las), len(ids))
	var clusters [][]string
	start := 0
	for _, size := range balancedSizes(len(ids), k) {
		clusters = append(clusters, ids[start:start+size])
		start += size
	}
	placed, _ := t.assignClusters(clusters, b)
	return placed
}

func total(d map[int]int) int {
	s := 0
	for _, v := range d {
		s += v
	}
	return s
}

// assignClusters gives each cluster a distinct local aggregator at minimal total cost of one
// global round with one local round (clients -> aggregator, plus aggregator -> global, which
// matters only when there are more aggregators than clusters). The result is indexed like
// t.las: result[a] is the cluster of t.las[a] (nil when unused).
func (t *topo) assignClusters(clusters [][]string, b Budget) ([][]string, float64) {
	w := make([][]float64, len(clusters))
	for i, cl := range clusters {
		w[i] = make([]float64, len(t.las))
		for j, a := range t.las {
			up, _ := t.cost(a, t.global)
			s := up
			for _, c := range cl {
				v, _ := t.cost(c, a)
				s += v
			}
			w[i][j] = s * b.ModelMB
		}
	}
	col := assignRows(w)
	out := make([][]string, len(t.las))
	var cost float64
	for i, j := range col {
		out[j] = clusters[i]
		cost += w[i][j]
	}
	return out, cost
}

// minCost places each client on its cheapest local aggregator within the capacity.
func (t *topo) minCost(opt Options) ([][]string, error) {
	n, k := len(t.clients), len(t.las)
	capEach := (n+k-1)/k + max(opt.CostSlack, 0)
	cost := make([][]float64, n)
	for i, c := range t.clients {
		cost[i] = make([]float64, k)
		reachable := false
		for j, a := range t.las {
			v, ok := t.cost(c, a)
			if !ok {
				v = math.Inf(1)
			} else {
				reachable = true
			}
			cost[i][j] = v
		}
		if !reachable {
			return nil, fmt.Errorf("client %s has no communication cost to any local aggregator (%s)", c, strings.Join(t.las, ", "))
		}
	}
	capacity := make([]int, k)
	for j := range capacity {
		capacity[j] = capEach
	}
	where, ok := transport(cost, capacity)
	if !ok {
		return nil, fmt.Errorf("min-cost: the clients cannot all be placed with at most %d per local aggregator (cost slack %d): some have costs to too few aggregators", capEach, opt.CostSlack)
	}
	out := make([][]string, k)
	for i, j := range where {
		out[j] = append(out[j], t.clients[i])
	}
	return out, nil
}

// finish builds the configuration from clusters indexed like t.las (nil = aggregator unused).
func (t *topo) finish(s Strategy, byAgg [][]string, exact bool, b Budget) (Config, error) {
	cfg := Config{Strategy: s, Global: t.global, Exact: exact}
	in := t.instance(t.clients)
	counts := make([]float64, in.classes)
	idx := map[string]int{}
	for i, c := range t.clients {
		idx[c] = i
	}
	for j, cl := range byAgg {
		if len(cl) == 0 {
			continue
		}
		a := t.las[j]
		c := Cluster{Aggregator: a, Clients: append([]string(nil), cl...)}
		sort.Strings(c.Clients)
		clear(counts)
		for _, id := range c.Clients {
			addTo(counts, in.x[idx[id]], 1)
			v, err := t.needCost(id, a, "client")
			if err != nil {
				return Config{}, err
			}
			c.Cost += v * b.ModelMB
		}
		c.KLD = in.kld(counts)
		up, err := t.needCost(a, t.global, "local aggregator")
		if err != nil {
			return Config{}, err
		}
		cfg.GlobalCost += up * b.ModelMB
		cfg.LocalCost += c.Cost
		cfg.Clusters = append(cfg.Clusters, c)
	}
	var sum float64
	for _, c := range cfg.Clusters {
		sum += c.KLD
	}
	cfg.KLD = sum / float64(len(cfg.Clusters))
	var err error
	cfg.Epochs, cfg.LocalRounds, cfg.CostPerEpoch, err = BudgetRule(cfg.GlobalCost, cfg.LocalCost, b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", s, err)
	}
	return cfg, nil
}
