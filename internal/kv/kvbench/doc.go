// Package kvbench is `continuum bench kv`: Run starts kv, etcd
// and Redis itself, one after the other on this machine, and measures each the same way: load
// phase, an open-loop rate sweep until p99 exceeds a limit, a closed-loop peak, memory and disk
// per million keys; Markdown renders a Run for docs/benchmarks/.
package kvbench
