package plan

import (
	"fmt"
	"math"
)

// Budget is the cost configuration: the model's size and the communication budget per client
// epoch, with the bounds of the search for epochs and local rounds.
type Budget struct {
	ModelMB        float64 `json:"model_mb"`         // model size in MB (seed: 10)
	PerEpoch       float64 `json:"per_epoch"`        // communication budget per client epoch (seed: 600 units)
	MaxEpochs      int     `json:"max_epochs"`       // search bound (default 100)
	MaxLocalRounds int     `json:"max_local_rounds"` // search bound (default 100)
}

// DefaultBudget is the seed's: a 10 MB model, 600 units per epoch.
func DefaultBudget() Budget {
	return Budget{ModelMB: 10, PerEpoch: 600, MaxEpochs: 100, MaxLocalRounds: 100}
}

// Validate checks the budget's fields, naming the one that is wrong.
func (b Budget) Validate() error {
	switch {
	case !(b.ModelMB > 0) || math.IsInf(b.ModelMB, 0):
		return fmt.Errorf("budget: model size %v MB: want a number > 0", b.ModelMB)
	case !(b.PerEpoch > 0) || math.IsInf(b.PerEpoch, 0):
		return fmt.Errorf("budget: %v per epoch: want a number > 0", b.PerEpoch)
	case b.MaxEpochs < 0 || b.MaxLocalRounds < 0:
		return fmt.Errorf("budget: bounds %d epochs, %d local rounds: want >= 0 (0 = 100)", b.MaxEpochs, b.MaxLocalRounds)
	}
	return nil
}

func (b Budget) bounds() (int, int) {
	e, l := b.MaxEpochs, b.MaxLocalRounds
	if e == 0 {
		e = 100
	}
	if l == 0 {
		l = 100
	}
	return e, l
}

// costPerEpoch is the seed's communication cost per client epoch:
// (global + localRounds*local) / (localRounds*epochs).
func costPerEpoch(global, local float64, epochs, localRounds int) float64 {
	return (global + float64(localRounds)*local) / float64(localRounds*epochs)
}

// BudgetRule is the seed's rule: the smallest epochs E for which some local-rounds count L
// meets the budget ((global + L*local) / (L*E) <= b.PerEpoch), then the smallest L for that E.
// global is the cost of one global aggregation (local aggregators -> global), local that of
// one local aggregation (clients -> their aggregators). A centralized configuration is
// global = 0 and local = clients -> global: the smallest E with local/E <= budget, and L = 1.
// Fig. 14 of the seed: BudgetRule(2000, 6000, 600 per epoch) = 11 epochs, 4 local rounds,
// 590.91 per epoch.
func BudgetRule(globalCost, localCost float64, b Budget) (epochs, localRounds int, cpe float64, err error) {
	if err := b.Validate(); err != nil {
		return 0, 0, 0, err
	}
	if globalCost < 0 || localCost < 0 || math.IsNaN(globalCost+localCost) || math.IsInf(globalCost+localCost, 0) {
		return 0, 0, 0, fmt.Errorf("budget rule: costs %v (global) and %v (local): want finite numbers >= 0", globalCost, localCost)
	}
	maxE, maxL := b.bounds()
	// The cost per epoch falls as L grows, so an E works iff L = maxL does; the tolerance
	// keeps a cost equal to the budget (up to rounding) within it.
	limit := b.PerEpoch * (1 + 1e-12)
	for e := 1; e <= maxE; e++ {
		if costPerEpoch(globalCost, localCost, e, maxL) > limit {
			continue
		}
		for l := 1; l <= maxL; l++ {
			if c := costPerEpoch(globalCost, localCost, e, l); c <= limit {
				return e, l, c, nil
			}
		}
	}
	return 0, 0, 0, fmt.Errorf("budget %v per epoch is unreachable within %d epochs and %d local rounds: the least is %.2f per epoch "+
		"(global aggregation %v, local aggregation %v per round); raise the budget or the bounds, or shrink the model",
		b.PerEpoch, maxE, maxL, costPerEpoch(globalCost, localCost, maxE, maxL), globalCost, localCost)
}
