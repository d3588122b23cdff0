// Package shareddata is the NPM platform: the shared data layer through which edge
// microservices exchange network performance metrics (NPMs), control policies and their own
// state, over continuum kv, etcd or Redis (standalone or Redis Cluster).
//
// Applications program against one interface, Store. Its first half is shaped like the O-RAN
// SC Shared Data Layer that xApp developers know: namespaces, Set/Get, conditional writes
// (SetIf, SetIfNotExists, RemoveIf), groups, and writes that publish an event atomically with
// the data (SetAndPublish) to channel subscribers. Its second half is what seeds/000's
// platform needs: producers publish metrics for a group and consumers subscribe to them,
// consumers publish control for a producer, and every consumer keeps a fixed-capacity state
// queue. Reads take a consistency (linearizable or serializable) where the backend has both.
//
// Two things are stronger than SDL and than the seed's PACE. A state-queue push that drops the
// oldest entry and returns the whole state is one atomic round trip (an etcd Txn, a Redis
// script), where PACE makes seven. Subscriptions deliver every message at least once, in order,
// and resume after a reconnect from the last one delivered; if the backend no longer holds
// what was missed (etcd compacted it, a Redis stream trimmed it) the subscriber is told with a
// gap message instead of silently skipping.
//
// The key layouts (see layout.go) follow seeds/000 §3.2: etcd and kv keep /metrics/, /ctrl/
// and /state/ trees and notify through watch; Redis keeps keys and streams (XADD/XREAD),
// with hash tags so that what must be atomic lives in one Redis Cluster slot.
//
// It does not start servers (package baselines and the component kinds do) and knows nothing
// of the testbed; PACE, the producer/consumer emulator, is a workload built on it.
package shareddata
