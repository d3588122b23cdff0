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
// of equal size are interchangeable, so an empty cluster is only ever opened in order) when the
// number of balanced partitions is at most Options.ExactMaxPartitions (default 2e6: n <= 23
// clients for 2 aggregators, 17 for 3, 16 for 4, 15 for 5); beyond it a heuristic runs (greedy
// by largest deviation first, then pairwise swaps and moves guided by the KLD's gradient, over
// a few seeded restarts; deterministic for Options.Seed). On 300 random instances where both
// run, the heuristic stayed within a factor 1.05 of the exact mean KLD (plan_test.go asserts
// 1.25 with margin; docs/benchmarks/fl-plan.md has the measured figures).
//
// The package knows nothing of processes, Flower, the testbed or the CLI: it is what the
// orchestrator (internal/fl/orchestrator) and `continuum fl plan` compute with.
package plan
