// Package rtdb is a Firebase-compatible realtime database served over HTTP (the REST protocol of
// the Firebase Realtime Database and its emulator: `/path.json?ns=<database>`), whose JSON tree
// lives in continuum kv (or any etcd v3 server) through etcd's clientv3.
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
// (etcd's default --max-txn-ops), so one write may touch at most 128 keys (puts plus deletes) and
// an if-match or increment may read at most about 120 keys; larger writes get a 400.
//
// # ETags
//
// The ETag of a value is the standard base64 of the SHA-1 of its canonical JSON (keys sorted, no
// spaces, numbers as stored, null as "null"): the same form as Firebase's, not the same bytes.
// GET with "X-Firebase-ETag: true" returns it; PUT or DELETE with "if-match: <etag>" writes only
// if the value is unchanged, else answers 412 with the current value and its ETag, which is how
// the Admin SDKs run transactions over REST.
//
// # Server values
//
// {".sv": "timestamp"} is the server's time in ms; {".sv": {"increment": n}} adds n to the number
// there (or writes n when there is none), read and written in the write's guarded Txn, so
// concurrent increments never lose one.
package rtdb
