// Package experiment is the runner: it turns a scenario file into results. It owns
//
//   - the scenario schema and its loader (scenario_types.go, scenario.go): strict decoding,
//     other formats a system registers (kind.Format), each component's and workload's config
//     decoded into its kind's own struct and validated, `--set` overrides and sweeps expanded
//     into runs (sweep.go, sweeplabels.go), and `run --check` (check.go), which builds every
//     instance's command line without starting anything;
//   - one run (runner.go): the platform brought up, components started and waited for
//     (ready.go, service.go), samplers, workloads, the events timeline (events.go, set.go),
//     teardown, and the live progress line (progress.go, workprogress.go);
//   - what a run leaves in its results directory (results.go, network.go, kindmetrics.go,
//     summary.go), written through the schema of package results.
//
// It does not own the kinds (a system registers them through package kind, its SDK, and the
// runner only calls them), the places runs happen (package platform is the seam; the wiring
// in cmd/continuum picks the testbed or the Kubernetes platform, which this package never
// imports), or the report, which reads the results directory afterwards.
package experiment
