package flbench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/fl/plan"
)

// Config is the bench's configuration.
type Config struct {
	Clients     []int `json:"clients"`     // n of the runtime table (default 20, 100, 1000)
	Aggregators []int `json:"aggregators"` // k of the runtime table (default 2, 4, 10)
	Repeats     int   `json:"repeats"`     // timed repeats per cell; the median is reported (default 3)
	// Ratio instances: (n, k) pairs where the exact search runs, RatioPerShape random instances each.
	RatioShapes   [][2]int `json:"ratio_shapes"`
	RatioPerShape int      `json:"ratio_per_shape"`
	// ExactMaxPartitions is the exact search's limit used throughout (plan's default).
	ExactMaxPartitions float64   `json:"exact_max_partitions"`
	Seed               uint64    `json:"seed"`
	Command            string    `json:"-"`
	Log                io.Writer `json:"-"`
}

// DefaultConfig is the documented run (quick: small, for a smoke test).
func DefaultConfig(quick bool) Config {
	c := Config{Clients: []int{20, 100, 1000}, Aggregators: []int{2, 4, 10}, Repeats: 3,
		RatioShapes:   [][2]int{{12, 2}, {12, 3}, {12, 4}, {20, 2}, {16, 3}, {13, 6}},
		RatioPerShape: 40, ExactMaxPartitions: plan.DefaultOptions().ExactMaxPartitions, Seed: 1}
	if quick {
		c.Clients, c.Aggregators, c.Repeats = []int{20, 100}, []int{4}, 1
		c.RatioShapes, c.RatioPerShape = [][2]int{{10, 2}, {10, 3}}, 5
	}
	return c
}

// Timing is one cell of the runtime table.
type Timing struct {
	Clients     int       `json:"clients"`
	Aggregators int       `json:"aggregators"`
	What        string    `json:"what"`       // "min-kld heuristic", "min-kld exact", "min-cost", "replan (a client leaves)"
	Partitions  float64   `json:"-"`          // +Inf beyond float range, which JSON cannot hold
	PartText    string    `json:"partitions"` // Partitions as the Markdown shows it
	Seconds     []float64 `json:"seconds"`
	KLD         float64   `json:"kld"`
	Skipped     string    `json:"skipped,omitempty"`
}

// Ratio is the heuristic against the exact search on one shape of instances.
type Ratio struct {
	Clients     int     `json:"clients"`
	Aggregators int     `json:"aggregators"`
	Instances   int     `json:"instances"`
	Optimal     int     `json:"optimal"` // instances where the heuristic found the exact KLD
	Worst       float64 `json:"worst"`   // max heuristic/exact mean KLD
	Mean        float64 `json:"mean"`
	ExactSec    float64 `json:"exact_seconds"` // median per instance
	HeurSec     float64 `json:"heuristic_seconds"`
}

// Result is the bench's output.
type Result struct {
	benchkit.Header
	Config  Config   `json:"config"`
	Timings []Timing `json:"timings"`
	Ratios  []Ratio  `json:"ratios"`
}

// Run measures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg}
	b := plan.DefaultBudget()
	b.PerEpoch, b.MaxEpochs, b.MaxLocalRounds = 1e12, 1000, 1000 // the budget is not what is measured
	for _, k := range cfg.Aggregators {
		for _, n := range cfg.Clients {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(n*100+k)))
			nodes := Topology(rng, n, k)
			parts := plan.BalancedPartitions(n, k)
			heur := plan.DefaultOptions()
			heur.ExactMaxPartitions = -1
			heur.Seed = cfg.Seed
			exact := plan.DefaultOptions()
			exact.ExactMaxPartitions = cfg.ExactMaxPartitions
			cells := []struct {
				what string
				run  func() (plan.Config, error)
				skip string
			}{
				{"min-kld heuristic", func() (plan.Config, error) { return plan.Plan(nodes, plan.MinKLD, b, heur) }, ""},
				{"min-kld exact", func() (plan.Config, error) { return plan.Plan(nodes, plan.MinKLD, b, exact) }, ""},
				{"min-cost", func() (plan.Config, error) { return plan.Plan(nodes, plan.MinCost, b, heur) }, ""},
				{"replan (a client leaves)", nil, ""},
			}
			if parts > cfg.ExactMaxPartitions {
				cells[1].skip = fmt.Sprintf("over the exact limit of %.3g partitions", cfg.ExactMaxPartitions)
			}
			old, err := plan.Plan(nodes, plan.MinKLD, b, heur)
			if err != nil {
				return nil, fmt.Errorf("n=%d k=%d: %w", n, k, err)
			}
			rest := nodes[:len(nodes)-1] // the last node is a client
			cells[3].run = func() (plan.Config, error) {
				c, _, err := plan.Replan(old, rest, plan.MinKLD, b, heur)
				return c, err
			}
			for _, c := range cells {
				t := Timing{Clients: n, Aggregators: k, What: c.what, Partitions: parts, PartText: count(parts), Skipped: c.skip}
				if c.skip == "" {
					for range cfg.Repeats {
						start := time.Now()
						out, err := c.run()
						if err != nil {
							return nil, fmt.Errorf("n=%d k=%d %s: %w", n, k, c.what, err)
						}
						t.Seconds = append(t.Seconds, time.Since(start).Seconds())
						t.KLD = out.KLD
					}
					benchkit.Logf(cfg.Log, "n=%d k=%d %s: %.4f s (median), KLD %.5f", n, k, c.what, benchkit.Median(t.Seconds), t.KLD)
				}
				res.Timings = append(res.Timings, t)
			}
			res.Header.SampleLoad()
		}
	}
	for _, sh := range cfg.RatioShapes {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r, err := ratio(sh[0], sh[1], cfg, b)
		if err != nil {
			return nil, err
		}
		benchkit.Logf(cfg.Log, "ratio n=%d k=%d: worst %.4f mean %.4f optimal %d/%d", r.Clients, r.Aggregators, r.Worst, r.Mean, r.Optimal, r.Instances)
		res.Ratios = append(res.Ratios, r)
	}
	res.Header.Finish()
	return res, nil
}

func ratio(n, k int, cfg Config, b plan.Budget) (Ratio, error) {
	r := Ratio{Clients: n, Aggregators: k, Worst: 1}
	var exSec, heSec []float64
	var sum float64
	heur := plan.DefaultOptions()
	heur.ExactMaxPartitions = -1
	exact := plan.DefaultOptions()
	exact.ExactMaxPartitions = max(cfg.ExactMaxPartitions, plan.BalancedPartitions(n, k))
	for i := range cfg.RatioPerShape {
		rng := rand.New(rand.NewPCG(cfg.Seed+1000, uint64(n*10000+k*100+i)))
		nodes := Topology(rng, n, k)
		heur.Seed = uint64(i)
		start := time.Now()
		ex, err := plan.Plan(nodes, plan.MinKLD, b, exact)
		if err != nil {
			return r, err
		}
		exSec = append(exSec, time.Since(start).Seconds())
		start = time.Now()
		he, err := plan.Plan(nodes, plan.MinKLD, b, heur)
		if err != nil {
			return r, err
		}
		heSec = append(heSec, time.Since(start).Seconds())
		if ex.KLD <= 1e-9 {
			continue
		}
		q := he.KLD / ex.KLD
		r.Instances++
		sum += q
		r.Worst = max(r.Worst, q)
		if q <= 1+1e-9 {
			r.Optimal++
		}
	}
	if r.Instances > 0 {
		r.Mean = sum / float64(r.Instances)
	}
	r.ExactSec, r.HeurSec = benchkit.Median(exSec), benchkit.Median(heSec)
	return r, nil
}

// Topology is a random instance: a global aggregator g, k local aggregators a1..ak at 100 per
// MB from it, and n clients c1..cn (the last is a client) with costs 10 to 200 per MB to every
// aggregator and 1 to 3 classes of 100 to 20000 samples each.
func Topology(rng *rand.Rand, n, k int) []plan.Node {
	nodes := []plan.Node{{ID: "g", Role: plan.RoleGlobal}}
	for j := 1; j <= k; j++ {
		nodes = append(nodes, plan.Node{ID: fmt.Sprintf("a%d", j), Role: plan.RoleAggregator, Cost: map[string]float64{"g": 100}})
	}
	for i := 1; i <= n; i++ {
		c := plan.Node{ID: fmt.Sprintf("c%d", i), Role: plan.RoleClient, Cost: map[string]float64{"g": float64(100 + rng.IntN(200))}, Data: map[int]int{}}
		for j := 1; j <= k; j++ {
			c.Cost[fmt.Sprintf("a%d", j)] = float64(10 + rng.IntN(191))
		}
		for range 1 + rng.IntN(3) {
			c.Data[rng.IntN(10)] += 100 + rng.IntN(19901)
		}
		nodes = append(nodes, c)
	}
	return nodes
}
