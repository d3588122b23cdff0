// Package mvcc is Continuum kv's storage engine: a multi-version key-value store with etcd's
// revision semantics (one revision per write request, create/mod revision and version per key,
// history until compaction) on top of Pebble, plus the replication-ready change log (every write
// request is one Change with a global id, a hybrid-logical-clock timestamp and a content hash).
//
// It owns durability (group commit, fsync before a write is acknowledged), the in-memory key
// index, compaction, leases and the watch event feed. It knows nothing of gRPC: requests and
// results use etcd's data types (etcdserverpb, mvccpb) and errors are the package's own
// (ErrCompacted, ErrFutureRev, ...); internal/kv/server maps them to etcd's wire errors.
package mvcc
