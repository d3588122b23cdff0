// Package kvcmd is continuum kv's command line: `continuum kv` (a member, single or in a
// local-first cluster), `kv snapshot restore`, and `load kv-lag` (replication lag between two
// members). Its flags follow etcd's names.
package kvcmd
