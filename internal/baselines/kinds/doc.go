// Package kinds is the baselines' adapter to experiments: the component kinds "etcd" (a real
// etcd 3.6 member; members with the same cluster form one cluster) and "redis" (redis-server
// with AOF), and the workload "ycsb" (`continuum load ycsb`) that drives any component with an
// etcd-v3 or redis endpoint (etcd, redis, continuum kv).
package kinds
