// Package kinds is the fl system's adapter to experiments: the fl-orchestrator component, the
// fl-job workload and the "Federated learning" report section. It imports the system's command
// package, so installing the system (one line in internal/systems/install) registers
// `continuum fl ...` and `continuum bench fl-plan` too.
package kinds
