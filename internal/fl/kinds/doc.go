// Package kinds is the fl system's adapter to experiments: the fl-orchestrator component, the
// fl-job workload and the "Federated learning" report section.
package kinds
