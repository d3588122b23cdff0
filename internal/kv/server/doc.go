// Package server serves a Continuum kv store (internal/kv/mvcc) over etcd's v3 gRPC API: KV,
// Watch, Lease, Maintenance, Cluster and Auth (users, roles, key permissions, simple and JWT tokens: auth*.go), plus Prometheus /metrics and
// /health over HTTP. It only adapts: it validates requests as etcd's v3rpc layer does, calls the
// store, fills response headers and maps store errors to etcd's wire errors (rpctypes), so that
// etcd clients behave exactly as they do against etcd. Storage semantics live in mvcc.
package server
