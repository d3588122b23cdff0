// Package kinds is continuum kv's adapter to experiments: the component kind "kv" (`continuum
// kv` on a node; members with the same cluster replicate), the workload "kv-lag" (replication
// lag between two etcd-API members), and the convergence figures kv members report through
// their events file (caught up with each peer after a partition heals).
//
// The kv packages themselves (mvcc, replication, server) know nothing of experiments; this
// package only turns a scenario's config into their command line and reads what they wrote.
package kinds
