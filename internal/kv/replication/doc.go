// Package replication makes continuum kv members replicate without consensus: every member
// serves reads and writes from its own store (package mvcc), and changes flow between members
// over a gRPC stream per peer.
//
// Each member pulls from each of its peers: it opens a Sync stream with its version vector, and
// the peer sends every change in its log that the member lacks — its own changes and those it
// learned from others, so changes reach every member of a partial mesh transitively — then every
// new change the moment it commits (the optimistic push), with heartbeats carrying the peer's
// version vector in between. A broken stream is reopened with the member's current version
// vector, which is the anti-entropy: whatever a member missed while it or a link was down is
// exactly what the peer's log holds beyond that vector. Conflicts are resolved by the store
// (last writer wins by HLC stamp), so all members that hold the same changes hold the same state.
//
// It owns the peer protocol (replication.proto), the pullers and the Sync service, and the view
// of the cluster's members; it does not own the etcd API (package server) or storage (mvcc).
package replication
