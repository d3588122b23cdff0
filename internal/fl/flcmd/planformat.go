package flcmd

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// writeConfig prints a configuration as the seed's Fig. 12 does, with what it left implicit
// (the aggregators' costs, how the clustering was found).
// kept marks a configuration Replan kept from before (its clusters were not searched for).
func writeConfig(w io.Writer, c plan.Config, kept bool) {
	how := "exact clustering"
	switch {
	case c.Centralized():
		how = "no clusters"
	case kept:
		how = "the clusters kept, with the least change"
	case !c.Exact:
		how = "heuristic clustering"
	}
	fmt.Fprintf(w, "Strategy: %s (%s)\n", c.Strategy, how)
	fmt.Fprintf(w, "Global aggregator: %s\n", c.Global)
	if c.Centralized() {
		fmt.Fprintf(w, "Clients: [%s]\n", strings.Join(c.Clients, " "))
	} else {
		var cl []string
		for _, x := range c.Clusters {
			cl = append(cl, "["+strings.Join(x.Clients, " ")+"]")
		}
		if c.Exact && !kept {
			fmt.Fprintf(w, "Optimal clusters: %s\nBest KLD: %v\n", strings.Join(cl, " "), c.KLD)
		} else {
			fmt.Fprintf(w, "Clusters: %s\nKLD: %v\n", strings.Join(cl, " "), c.KLD)
		}
	}
	fmt.Fprintf(w, "Cost per epoch: %.4f (global %g per global round, local %g per local round)\n", c.CostPerEpoch, c.GlobalCost, c.LocalCost)
	fmt.Fprintf(w, "Epochs: %d\nLocal rounds: %d\n", c.Epochs, c.LocalRounds)
	if !c.Centralized() {
		fmt.Fprintln(w, "Aggregators ::")
		for _, x := range c.Clusters {
			fmt.Fprintf(w, "  %s  parent %s  clients %d  local rounds %d  KLD %.6f  cost %g per local round\n",
				x.Aggregator, c.Global, len(x.Clients), c.LocalRounds, x.KLD, x.Cost)
		}
	}
	fmt.Fprintln(w, "Clients ::")
	parents := c.Parents()
	for _, id := range c.AllClients() {
		fmt.Fprintf(w, "  %s  parent %s  epochs %d\n", id, parents[id], c.Epochs)
	}
}

func writeChange(w io.Writer, ch plan.Change) {
	fmt.Fprintf(w, "Reconfiguration: %s\n", ch.Reason)
	ids := make([]string, 0, len(ch.Moved))
	for id := range ch.Moved {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := ch.Moved[id]
		from, to := m[0], m[1]
		if from == "" {
			from = "(joined)"
		}
		if to == "" {
			to = "(left)"
		}
		fmt.Fprintf(w, "  moved %s: %s -> %s\n", id, from, to)
	}
	if len(ch.Aggregators) > 0 {
		fmt.Fprintf(w, "  local aggregators to reconfigure: %s\n", strings.Join(ch.Aggregators, " "))
	} else {
		fmt.Fprintln(w, "  no local aggregator changes")
	}
	fmt.Fprintf(w, "  global aggregator changes: %v\n", ch.GlobalChanged)
}
