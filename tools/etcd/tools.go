//go:build tools

// Package tools pins the etcd release that `make setup` builds as the baseline and for the
// compatibility tests (etcd's own `go install` does not work because of its replace directives).
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
	_ "go.etcd.io/etcd/v3/tools/benchmark"
)
