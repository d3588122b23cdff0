// Package kvtarget adapts key-value stores to the YCSB workload (package loadgen/ycsb): an etcd
// v3 adapter on the official client (it also drives `continuum kv`, which speaks the same API)
// and a Redis adapter on go-redis. Each classifies its errors for loadgen's errors_by_type:
// etcd by gRPC code ("grpc_Unavailable", "grpc_DeadlineExceeded", ...), Redis by the error
// prefix of the reply ("redis_LOADING", "redis_OOM", ...) or by client condition
// ("redis_pool_timeout"); network failures keep loadgen's own types. A read of a missing key
// is the error "not_found".
//
// Records are one value per key on both stores (see package ycsb). On Redis the value is a
// string (SET/GET, not a hash, so both stores hold the same bytes), and scans use a sorted set
// "_indices" holding every inserted key with score 0, ranged by ZRANGEBYLEX from the start key
// (YCSB's Redis binding keeps the same index, scored by a key hash), then MGET. On etcd a scan
// is a Range from the start key with a limit. Reads on etcd are linearizable (etcd's default).
//
// The package owns no scheduling or measurement (loadgen does) and no server processes
// (package kvtarget/baseline starts them).
package kvtarget
