package plan

import (
	"slices"
	"strings"
	"testing"
)

func seedPlan(t *testing.T) (Config, []Node) {
	t.Helper()
	nodes := seedNodes(t)
	cfg, err := Plan(nodes, MinKLD, DefaultBudget(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return cfg, nodes
}

func TestReplanNoChange(t *testing.T) {
	old, nodes := seedPlan(t)
	cfg, ch, err := Replan(old, nodes, MinKLD, DefaultBudget(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if ch.Reoptimized || len(ch.Moved) != 0 || len(ch.Aggregators) != 0 || ch.GlobalChanged {
		t.Errorf("no change expected: %+v", ch)
	}
	if cfg.KLD != old.KLD || !slices.Equal(cfg.AllClients(), old.AllClients()) {
		t.Errorf("config changed: %+v", cfg)
	}
}

// The seed's event: n9 leaves. Keeping the clusters ({n5 n6 n7} at n2, {n4 n8} at n3) moves
// nobody; the re-optimisation ({n6 n7} at n2, {n4 n5 n8} at n3, KLD 0.3797) moves n5. Whether
// it is worth it is MinGain's call.
func TestReplanClientLeaves(t *testing.T) {
	old, nodes := seedPlan(t)
	now := without(nodes, "n9")
	opt := DefaultOptions()
	opt.MinGain = 0 // any gain is worth a move
	cfg, ch, err := Replan(old, now, MinKLD, DefaultBudget(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Reoptimized || cfg.KLD != 0.37967447155304745 {
		t.Fatalf("MinGain 0: want the re-optimisation, got %+v, %+v", ch, cfg)
	}
	if ch.Moved["n9"] != [2]string{"n3", ""} || ch.Moved["n5"] != [2]string{"n2", "n3"} || len(ch.Moved) != 2 {
		t.Errorf("moved %v, want n9 left n3 and n5 n2 -> n3", ch.Moved)
	}
	if !slices.Equal(ch.Aggregators, []string{"n2", "n3"}) || ch.GlobalChanged {
		t.Errorf("aggregators %v global changed %v", ch.Aggregators, ch.GlobalChanged)
	}
	t.Log(ch.Reason)

	opt.MinGain = 10 // no gain is worth a move
	cfg, ch, err = Replan(old, now, MinKLD, DefaultBudget(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Reoptimized || len(ch.Moved) != 1 || ch.Moved["n9"] != [2]string{"n3", ""} {
		t.Fatalf("MinGain 10: want the clusters kept, got %+v", ch)
	}
	p := cfg.Parents()
	if p["n5"] != "n2" || p["n4"] != "n3" || p["n8"] != "n3" || cfg.KLD <= 0.37967447155304745 {
		t.Errorf("kept config %+v", cfg)
	}
	if !strings.Contains(ch.Reason, "kept the clusters") || !strings.Contains(ch.Reason, "left: n9") {
		t.Errorf("reason %q", ch.Reason)
	}
	t.Log(ch.Reason)
}

func TestReplanClientJoins(t *testing.T) {
	old, nodes := seedPlan(t)
	n10 := Node{ID: "n10", Role: RoleClient, Cost: map[string]float64{"n1": 200, "n2": 100, "n3": 100}, Data: map[int]int{2: 5000, 3: 5000}}
	opt := DefaultOptions()
	opt.MinGain = 10
	cfg, ch, err := Replan(old, append(slices.Clone(nodes), n10), MinKLD, DefaultBudget(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Reoptimized || len(ch.Moved) != 1 || ch.Moved["n10"][0] != "" || ch.Moved["n10"][1] == "" {
		t.Fatalf("want n10 joined with nothing else moved: %+v", ch)
	}
	// n10 went where it lowers the KLD most; check against the other cluster.
	in := cfg.Parents()["n10"]
	other := "n2"
	if in == "n2" {
		other = "n3"
	}
	alt := moveClient(cfg, "n10", other)
	if k := klds(t, append(slices.Clone(nodes), n10), alt); k < cfg.KLD {
		t.Errorf("n10 at %s gives KLD %v, at %s %v: not the lower", in, cfg.KLD, other, k)
	}
	if !slices.Contains(ch.Aggregators, in) {
		t.Errorf("aggregators %v lack %s", ch.Aggregators, in)
	}
}

func TestReplanAggregatorLeaves(t *testing.T) {
	old, nodes := seedPlan(t)
	now := without(nodes, "n2")
	cfg, ch, err := Replan(old, now, MinKLD, DefaultBudget(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) != 1 || cfg.Clusters[0].Aggregator != "n3" || len(cfg.Clusters[0].Clients) != 6 {
		t.Fatalf("want every client at n3: %+v", cfg)
	}
	for _, c := range old.Clusters[0].Clients { // n2's
		if ch.Moved[c] != [2]string{"n2", "n3"} {
			t.Errorf("%s: moved %v, want n2 -> n3", c, ch.Moved[c])
		}
	}
	if !slices.Equal(ch.Aggregators, []string{"n2", "n3"}) || !ch.GlobalChanged {
		t.Errorf("aggregators %v, global changed %v", ch.Aggregators, ch.GlobalChanged)
	}
}

func TestReplanForced(t *testing.T) {
	old, nodes := seedPlan(t)
	_, ch, err := Replan(old, nodes, MinCost, DefaultBudget(), DefaultOptions())
	if err != nil || !ch.Reoptimized || !strings.Contains(ch.Reason, "strategy changed") {
		t.Errorf("strategy change: %+v %v", ch, err)
	}
	_, ch, err = Replan(Config{}, nodes, MinKLD, DefaultBudget(), DefaultOptions())
	if err != nil || !ch.Reoptimized || len(ch.Moved) != 6 {
		t.Errorf("first plan: %+v %v", ch, err)
	}
	cfg, ch, err := Replan(old, without(nodes, "n2", "n3"), MinKLD, DefaultBudget(), DefaultOptions())
	if err != nil || !cfg.Centralized() || !ch.Reoptimized || !ch.GlobalChanged {
		t.Errorf("every local aggregator gone: %+v %+v %v", cfg, ch, err)
	}
	// Two leavers from n2's cluster {n5 n6 n7} leave it at 1 against 3: the kept
	// configuration moves one client over to restore the balance.
	opt := DefaultOptions()
	opt.MinGain = 10
	cfg, _, err = Replan(old, without(nodes, "n5", "n6"), MinKLD, DefaultBudget(), opt)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 100, 0
	for _, cl := range cfg.Clusters {
		lo, hi = min(lo, len(cl.Clients)), max(hi, len(cl.Clients))
	}
	if hi-lo > 1 {
		t.Errorf("kept clusters out of balance: %+v", cfg.Clusters)
	}
}

func TestReplanMinCost(t *testing.T) {
	nodes := seedNodes(t)
	old, err := Plan(nodes, MinCost, DefaultBudget(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	n10 := Node{ID: "n10", Role: RoleClient, Cost: map[string]float64{"n1": 200, "n2": 10, "n3": 100}, Data: map[int]int{2: 5}}
	cfg, ch, err := Replan(old, append(slices.Clone(nodes), n10), MinCost, DefaultBudget(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Parents()["n10"] != "n2" || ch.Moved["n10"] != [2]string{"", "n2"} {
		t.Errorf("n10 should join its cheapest aggregator n2: %+v", ch)
	}
}

func moveClient(c Config, id, to string) Config {
	out := c
	out.Clusters = nil
	for _, cl := range c.Clusters {
		cl.Clients = slices.DeleteFunc(slices.Clone(cl.Clients), func(s string) bool { return s == id })
		if cl.Aggregator == to {
			cl.Clients = append(cl.Clients, id)
		}
		out.Clusters = append(out.Clusters, cl)
	}
	return out
}

// klds recomputes a configuration's mean KLD from scratch.
func klds(t *testing.T, nodes []Node, c Config) float64 {
	t.Helper()
	tp, err := classify(nodes, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := tp.instance(tp.clients)
	idx := map[string]int{}
	for i, id := range tp.clients {
		idx[id] = i
	}
	var cl [][]int
	for _, x := range c.Clusters {
		var m []int
		for _, id := range x.Clients {
			m = append(m, idx[id])
		}
		cl = append(cl, m)
	}
	return in.meanKLD(cl)
}
