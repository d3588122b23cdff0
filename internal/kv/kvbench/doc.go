// Package kvbench runs the YCSB workload against key-value stores: LoadYCSB is `continuum load
// ycsb` (one target that is already running), Run is `continuum bench kv` (it starts kv, etcd
// and Redis itself, one after the other on this machine, and measures each the same way: load
// phase, an open-loop rate sweep until p99 exceeds a limit, a closed-loop peak, memory and disk
// per million keys), and Markdown renders a Run for docs/benchmarks/.
package kvbench
