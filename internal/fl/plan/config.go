package plan

import (
	"fmt"
	"sort"
	"strings"
)

// Strategy is how a configuration is chosen.
type Strategy string

const (
	// Centralized: every client trains against the global aggregator.
	Centralized Strategy = "centralized"
	// MinKLD: balanced clusters of minimal mean KLD, one per local aggregator (the seed's).
	MinKLD Strategy = "min-kld"
	// MinCost: each client to its cheapest local aggregator, within Options.CostSlack of balance.
	MinCost Strategy = "min-cost"
	// LabelSorted: clients sorted by the classes they hold and cut into balanced contiguous
	// clusters, so that each cluster sees few classes (the seed's non-IID clusters, Fig. 9): a
	// baseline to compare min-kld's clusters with, not a strategy to train with.
	LabelSorted Strategy = "label-sorted"
)

// Strategies lists every strategy, for help texts and errors.
var Strategies = []Strategy{Centralized, MinKLD, MinCost, LabelSorted}

// ParseStrategy reads a strategy name.
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range Strategies {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, len(Strategies))
	for i, st := range Strategies {
		names[i] = string(st)
	}
	return "", fmt.Errorf("strategy %q: want one of %s", s, strings.Join(names, ", "))
}

// Cluster is one local aggregator and its clients.
type Cluster struct {
	Aggregator string   `json:"aggregator"` // local aggregator node ID
	Clients    []string `json:"clients"`    // sorted
	KLD        float64  `json:"kld"`        // KLD of the cluster's label distribution vs the global one
	Cost       float64  `json:"cost"`       // clients -> aggregator cost per local round (sum cost*ModelMB)
}

// Config is a federated-learning configuration.
type Config struct {
	Strategy Strategy `json:"strategy"`
	Global   string   `json:"global"` // global aggregator node ID
	// Clusters is empty for a centralized configuration; Clients lists every client then.
	Clusters []Cluster `json:"clusters,omitempty"`
	Clients  []string  `json:"clients,omitempty"` // centralized only, sorted
	// KLD is the mean of the clusters' KLD (the seed's "Best KLD"), 0 for centralized.
	KLD         float64 `json:"kld"`
	Epochs      int     `json:"epochs"`       // local epochs per local round
	LocalRounds int     `json:"local_rounds"` // local aggregations per global round (1 for centralized)
	// CostPerEpoch is (GlobalCost + LocalRounds*LocalCost) / (LocalRounds*Epochs).
	CostPerEpoch float64 `json:"cost_per_epoch"`
	// GlobalCost is local aggregators -> global per global round (0 for centralized).
	GlobalCost float64 `json:"global_cost"`
	// LocalCost is clients -> their aggregator per local round (for centralized: -> global).
	LocalCost float64 `json:"local_cost"`
	// Exact is true if the clustering is optimal (enumeration, or min-cost's exact
	// transportation), false if the min-kld heuristic made it.
	Exact bool `json:"exact"`
}

// Centralized says whether clients train against the global aggregator directly.
func (c Config) Centralized() bool { return len(c.Clusters) == 0 }

// Parents maps every client to its aggregator (the global one when centralized).
func (c Config) Parents() map[string]string {
	m := map[string]string{}
	for _, id := range c.Clients {
		m[id] = c.Global
	}
	for _, cl := range c.Clusters {
		for _, id := range cl.Clients {
			m[id] = cl.Aggregator
		}
	}
	return m
}

// Aggregators lists the local aggregators in use, sorted.
func (c Config) Aggregators() []string {
	out := make([]string, len(c.Clusters))
	for i, cl := range c.Clusters {
		out[i] = cl.Aggregator
	}
	return out
}

// AllClients lists every client, sorted.
func (c Config) AllClients() []string {
	out := append([]string(nil), c.Clients...)
	for _, cl := range c.Clusters {
		out = append(out, cl.Clients...)
	}
	sort.Strings(out)
	return out
}

// Options tune the search and the reconfiguration decision. DefaultOptions has the documented
// values; a zero field means its default where the comment says so.
type Options struct {
	// Classes is the number of classes of the data set (0: 10, or more when a client holds a
	// higher class label).
	Classes int `json:"classes,omitempty"`
	// ExactMaxPartitions bounds the exact min-kld search: it enumerates when there are at most
	// this many balanced partitions (0: 2e6, about a second here), else the heuristic runs;
	// negative: always the heuristic.
	ExactMaxPartitions float64 `json:"exact_max_partitions,omitempty"`
	// Restarts of the heuristic (0: 16); Seed makes its random restarts reproducible.
	Restarts int    `json:"restarts,omitempty"`
	Seed     uint64 `json:"seed,omitempty"`
	// HeuristicWork bounds the heuristic's KLD evaluations, restarts included (0: 1e7, about
	// a second here); once spent, it returns the best clustering so far. Deterministic,
	// unlike a time limit.
	HeuristicWork int `json:"heuristic_work,omitempty"`
	// CostSlack: min-cost puts at most ceil(n/k)+CostSlack clients on a local aggregator.
	CostSlack int `json:"cost_slack,omitempty"`
	// MinGain is the min-kld mean-KLD gain every client moved beyond the forced moves must buy
	// for Replan to re-optimise (see Replan).
	MinGain float64 `json:"min_gain,omitempty"`
	// MoveCost is min-cost's counterpart: the cost per epoch every extra moved client must save.
	MoveCost float64 `json:"move_cost,omitempty"`
}

// DefaultOptions are the values the CLI and the orchestrator start from.
func DefaultOptions() Options {
	return Options{ExactMaxPartitions: 2e6, Restarts: 16, HeuristicWork: 1e7, Seed: 1, CostSlack: 1, MinGain: 0.01, MoveCost: 5}
}

func (o Options) work() int {
	if o.HeuristicWork <= 0 {
		return 1e7
	}
	return o.HeuristicWork
}

func (o Options) exactLimit() float64 {
	if o.ExactMaxPartitions == 0 {
		return 2e6
	}
	return o.ExactMaxPartitions
}
