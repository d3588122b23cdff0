package plan

import (
	"math"
	"strings"
	"testing"
)

func TestBudgetRule(t *testing.T) {
	b := DefaultBudget()
	for _, tc := range []struct {
		name            string
		global, local   float64
		epochs, lrounds int
		cpe             float64
	}{
		// The seed's Fig. 14: 2 local aggregators at 100/MB to the global, 6 clients at 100/MB.
		{"seed Fig. 14", 2000, 6000, 11, 4, 26000.0 / 44},
		// The seed's Fig. 17 (centralized): two clients at 100/MB to the global aggregator.
		{"seed centralized", 0, 2000, 4, 1, 500},
		{"free", 0, 0, 1, 1, 0},
		{"exactly the budget", 600, 0, 1, 1, 600},
	} {
		e, l, cpe, err := BudgetRule(tc.global, tc.local, b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if e != tc.epochs || l != tc.lrounds || math.Abs(cpe-tc.cpe) > 1e-9 {
			t.Errorf("%s: got %d epochs, %d local rounds, %v per epoch; want %d, %d, %v", tc.name, e, l, cpe, tc.epochs, tc.lrounds, tc.cpe)
		}
	}
	if _, _, cpe, _ := BudgetRule(2000, 6000, b); math.Abs(cpe-590.909090909) > 1e-6 {
		t.Errorf("Fig. 14 cost per epoch %v, want 590.91", cpe)
	}
}

func TestBudgetRuleErrors(t *testing.T) {
	small := Budget{ModelMB: 10, PerEpoch: 600, MaxEpochs: 5, MaxLocalRounds: 5}
	for _, tc := range []struct {
		name          string
		global, local float64
		b             Budget
		want          string
	}{
		{"unreachable", 2000, 6000, small, "unreachable within 5 epochs and 5 local rounds"},
		{"model size", 0, 1, Budget{PerEpoch: 1}, "model size"},
		{"budget", 0, 1, Budget{ModelMB: 1}, "per epoch: want a number > 0"},
		{"negative bound", 0, 1, Budget{ModelMB: 1, PerEpoch: 1, MaxEpochs: -1}, "bounds"},
		{"negative cost", -1, 1, DefaultBudget(), "want finite numbers >= 0"},
		{"NaN cost", math.NaN(), 1, DefaultBudget(), "want finite numbers >= 0"},
	} {
		_, _, _, err := BudgetRule(tc.global, tc.local, tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// The rule's two minimality claims, on a grid: no smaller epochs meet the budget with any
// local rounds in the bounds, and no smaller local rounds meet it with the epochs chosen.
func TestBudgetRuleMinimal(t *testing.T) {
	b := DefaultBudget()
	for g := 0.0; g <= 5000; g += 700 {
		for l := 0.0; l <= 20000; l += 1900 {
			e, lr, cpe, err := BudgetRule(g, l, b)
			if err != nil {
				continue
			}
			if cpe > b.PerEpoch*(1+1e-12) {
				t.Fatalf("(%v, %v): %v per epoch over the budget", g, l, cpe)
			}
			for e2 := 1; e2 < e; e2++ {
				if costPerEpoch(g, l, e2, b.MaxLocalRounds) <= b.PerEpoch {
					t.Fatalf("(%v, %v): %d epochs chosen but %d meet the budget", g, l, e, e2)
				}
			}
			for l2 := 1; l2 < lr; l2++ {
				if costPerEpoch(g, l, e, l2) <= b.PerEpoch {
					t.Fatalf("(%v, %v): %d local rounds chosen but %d meet the budget", g, l, lr, l2)
				}
			}
		}
	}
}
