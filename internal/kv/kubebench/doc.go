// Package kubebench is `continuum bench kube-store`: kube-apiserver on continuum kv and on etcd,
// both started here on loopback, measured the same way and interleaved over repeats. Run measures
// request latency through client-go (create, get, update, paginated list, delete, watch
// delivery), the footprint after the load (store data directory and RSS, the apiserver's RSS), the
// time the apiserver needs to become ready again after its store is killed with SIGKILL and
// restarted, and lost updates when two apiservers increment one ConfigMap through different kv
// members, through one kv member and through etcd (issue 26, sections 2 and 4). Markdown renders
// a Result for docs/benchmarks/kubernetes.md.
//
// It is a package of its own rather than part of kvbench: kvbench drives the stores' own API with
// YCSB, this one drives a real kube-apiserver with client-go (and imports the control plane and
// client-go, which kvbench's build and tests need not carry).
package kubebench
