// Package store is the realtime database's JSON tree kept in kv (continuum kv or any etcd v3
// server): one kv key per leaf, reads at one revision, and writes as one guarded Txn each,
// judged by the security rules in force at the revision they read.
//
// # Key layout
//
// Every leaf (string, number, boolean) of a database's tree is one kv key:
//
//	<prefix>/<ns>/<seg1>/<seg2>/.../<segN>  ->  the leaf as JSON text ("hi", 42, true)
//
// with prefix "/rtdb" by default; the root itself, when it is a leaf, is "<prefix>/<ns>". Firebase
// keys may not contain "/", so a key's segments are unambiguous. The value at a path P is read with
// one read-only Txn of two Ranges: the key of P itself, and the prefix "key(P)/" (a plain prefix
// "key(P)" would also match the siblings "P!x"), both at one revision.
//
// Invariants, kept by every write:
//   - A node is a leaf or has children, never both: a write at P deletes, in its Txn, every
//     ancestor key of P (a leaf there would otherwise shadow the new children) and every key at
//     or under P that the new value does not set again.
//   - Nothing is stored for null or for empty objects: they vanish, as in Firebase.
//   - A write is one etcd Txn: a PATCH of many children, a PUT of a subtree, its deletions and its
//     server values commit together or not at all; a 200 means that Txn committed.
//
// # Writes and concurrency
//
// A write reads the subtrees it replaces (one Txn, at revision R), computes its Puts and Deletes,
// and commits them in one Txn guarded by "ModRevision < R+1" on key(P) and on the prefix key(P)/,
// for each written path P: a key created or changed there since the read fails the guard, and the
// write is recomputed (bounded retries). Where the write consumed the old value (an if-match, an
// increment), every key it read is also compared with "ModRevision == what was read", which
// detects deletions too (a deleted key has ModRevision 0). A kv Txn holds at most 128 operations
// (etcd's default --max-txn-ops), so one write may touch at most 128 keys (puts plus deletes,
// counting the ancestor keys it clears: a new subtree of N leaves costs N+1 or more), an if-match
// or increment may read at most about 120 keys, and a multi-path PATCH may name at most 63 paths
// (its read takes 2 ranges per path, and its guard 2 compares per path plus one per key the
// rules read); larger writes get ErrTooLarge naming the limit (REST 400, WebSocket too_big),
// whether the store counted it first or the kv refused the Txn ("too many operations in txn
// request").
//
// # Server values
//
// {".sv": "timestamp"} is the server's time in ms; {".sv": {"increment": n}} adds n to the number
// there (or writes n when there is none), read and written in the write's guarded Txn, so
// concurrent increments never lose one.
//
// # Rules
//
// The caller is read from the context (auth.AuthFrom); admins bypass the rules. A database's
// rules live at SettingsKey(ns), else the rules file applies, else everything is allowed. Each
// read fetches the mod revision of the rules key in the same Txn as the data, so a request is
// judged by the rules in force at the revision it read, and what the rules read outside the
// written subtrees is guarded in the write's Txn too (rules.go).
//
// It does not own the HTTP or WebSocket protocols (packages rest, sse and ws), listeners
// (package hub) or credentials (package auth).
package store
