// Package plan is the pure computation of the fl system's orchestrator: from node features
// (role, communication costs, label distribution) and a communication budget it picks a
// federated-learning configuration, and after nodes leave or join it decides how to change it.
//
// Strategies:
//   - centralized: every client trains against the global aggregator.
//   - min-kld (seeds/004 §3): clients are split into balanced clusters (sizes differ by at most
//     one), one per local aggregator, so that the mean Kullback-Leibler divergence of the
//     clusters' label distributions from the global one is minimal; clusters go to local
//     aggregators by minimal communication cost; among clusterings of equal KLD the cheaper wins.
//   - min-cost: each client to its cheapest local aggregator, no aggregator holding more than
//     ceil(n/k)+Options.CostSlack clients (an exact transportation problem, solved by successive
//     shortest paths).
//
// Then the budget rule (BudgetRule) picks the smallest epochs, and for them the smallest local
// rounds, whose communication cost per client epoch meets the budget.
//
// The min-kld clustering is exact (enumeration of every balanced partition, each once: clusters
// of equal size are interchangeable, so an empty cluster is only ever opened in order; branches
// whose full clusters already exceed the best are cut) when the number of balanced partitions
// is at most Options.ExactMaxPartitions (default 2e6, about a second here: every n up to 24
// clients with 2 local aggregators, 16 with 3, 13 with 4 to 10). Beyond it a heuristic runs:
// a greedy construction (largest deviation from the global distribution first), then swaps and
// moves between pairs of clusters while they lower the KLD sum (every swap when a pair has at
// most 1024, else the 16 x 16 the KLD's gradient ranks best, evaluated exactly), restarted 16
// times from seeded random orders; deterministic for Options.Seed. On the 300 random instances
// of plan_test.go and the 240 of `continuum bench fl-plan` (n up to 20) it found the exact
// optimum in all but 2, and was never more than 1.03x the exact mean KLD; the test asserts
// 1.10. It plans 1000 clients for 10 aggregators in about 0.3 s (docs/benchmarks/fl-plan.md);
// its work is bounded (Options.HeuristicWork, about a second), which only many aggregators
// (30 and more for 1000 clients) reach.
//
// The package knows nothing of processes, Flower, the testbed or the CLI: it is what the
// orchestrator (internal/fl/orchestrator) and `continuum fl plan` compute with.
package plan
