//go:build !nokv

package main

// The kv/etcd prefix source (an etcd v3 client). -tags nokv leaves it out.
import _ "github.com/continuum-project/continuum/internal/proxy/discovery/kvprefix"
