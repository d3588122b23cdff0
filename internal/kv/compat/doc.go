// Package compat proves that `continuum kv` is compatible with etcd v3. It has no production
// code: its content is tests and the small helpers they need, each suite run through the same
// client against a real etcd 3.6 member and against continuum kv, so etcd is the specification.
//
// The suites: conformance through the official clientv3 (KV, watch, lease, maintenance,
// cluster) and through etcdctl; the auth suites (auth_test.go: an etcdctl user/role/auth
// script and a clientv3 sequence with simple and JWT tokens, compared step by step, and the
// unknown-user vs wrong-password timing test); a differential test that replays one seeded random
// operation sequence on both stores and requires identical responses; Kubernetes' use of
// etcd; bad input; durability after kill -9 and maintenance (compaction, defragmentation)
// under load; and a real Kubernetes control plane (kube-apiserver, controller-manager,
// scheduler from .tools/bin) on etcd, one kv member and a 3-member kv cluster, with the same
// outcomes required on all three (controlplane*_test.go).
//
// Binaries: etcd and etcdctl from $CONTINUUM_ETCD_BIN / $CONTINUUM_ETCDCTL_BIN or .tools/bin
// (`make setup`), continuum from $CONTINUUM_BIN or built once per run. A missing binary skips
// its target locally and fails it when CONTINUUM_REQUIRE_ROOT=1. -short trims the differential
// sequence and the load phases.
//
// CONTINUUM_COMPAT_SEED=n runs the differential test with one other seed. CONTINUUM_COMPAT_KV=etcd
// puts a second etcd in continuum kv's place, which checks the suites themselves: everything
// then passes except TestMaintenanceUnderLoad, where no request completes inside etcd's blocking
// defragmentation.
package compat
