// Package kvclient is the client side of continuum kv's own gRPC services, those beside the
// etcd API (which clients reach through etcd's clientv3): the Status service a member serves on
// its client listeners, which says which members hold a change (QueryHolders) and lists the
// writes that lost to concurrent ones (QueryConflicts), with the messages both ends exchange.
//
// It links no server code (no storage engine, no replication): a program that only asks a
// member about its state (the realtime database's /.conflicts.json, a test) imports this and
// nothing of package mvcc. Package replication serves the Status service on these messages;
// the values it answers with are mvcc's, converted to the plain types here (Stamp, ChangeID,
// Conflict), which carry exactly what crosses the wire.
package kvclient
