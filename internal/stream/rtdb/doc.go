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
// (etcd's default --max-txn-ops), so one write may touch at most 128 keys (puts plus deletes,
// counting the ancestor keys it clears: a new subtree of N leaves costs N+1 or more), an if-match
// or increment may read at most about 120 keys, and a multi-path PATCH may name at most 63 paths
// (its read takes 2 ranges per path, and its guard 2 compares per path plus one per key the
// rules read); larger writes get a 400 (WebSocket: too_big) naming the limit, whether the
// server counted it first or the kv refused the Txn ("too many operations in txn request").
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
//
// # Listeners (hub.go: the API the SSE and WebSocket protocols share)
//
// Hub.Subscribe(ctx, ns, path, query) returns a Subscription whose Next yields Events: first a
// put of the whole value at "/", then one event per kv revision that changed what the listener
// sees, oldest first. An Event is Firebase's: a "put" of Data at Path (relative to the listened
// path) or a "patch" of several children of Path (null deletes one). One REST write is one kv Txn,
// so one revision, so one event: a multi-path PATCH arrives as one patch. Events are shared by
// every listener of the same path and query (Event.SSE is encoded once for all of them).
//
// One kv watch per server covers every database (prefix "<prefix>/"), started at the first
// Subscribe; a trie of listened paths routes each revision's keys to the paths at, above and
// (for a leaf written above them) below those keys. Listeners of one path and query share a
// topic: the subtree cached at the topic's revision, kept current by the watch. A new topic reads
// its subtree once (revision R) while the watch keeps the revisions it delivers meanwhile; those
// after R are applied to the read, those up to R dropped: no gap, no duplicate (the watch began
// before the read, at a revision the read cannot precede). A listener joining an existing topic
// gets its put from the cache without reading kv (a reconnect storm costs no kv reads).
//
// A query (orderBy, limits, bounds) is re-evaluated on the topic's cached subtree at every
// revision that touched it; the children that entered, left or changed in the result are sent.
//
// When the watch fails (its revision was compacted, or it was cancelled), the hub restarts it at
// the current revision and re-reads every topic as above; each listener's queue is replaced by a
// full put, so clients end in the right state. A kv member restarting with its data is resumed by
// the etcd client's watch itself (from the next revision), with nothing resent.
//
// Slow listeners: the hub never waits for a reader. Each Subscription queues at most
// ListenerBufferBytes of event data; an event that would exceed it folds the queue: the queued
// events, and every later one until the reader takes them, become the set of the listened node's
// children they touched. The reader then gets one patch at "/" of those children's current
// values, taken from the topic's cache when it reads (null for a child deleted since), so a slow
// client skips intermediate states but ends right, and is sent what changed rather than the whole
// node (a growing list's new records, not the list). It gets one full put of the current value
// instead when a folded event replaced the node itself (a put at "/"), when the topic has a query
// (its result is re-sent), or when the set's key names outgrow ListenerBufferBytes. Memory per
// listener is bounded by the buffer plus the set. A reader that never reads (a dead TCP peer) is
// dropped by the SSE writer's WriteTimeout.
//
// Waiting for a revision: Hub.WaitApplied(ctx, rev) returns once every event up to kv revision
// rev is queued on the subscriptions it concerns. The WebSocket protocol needs it (a write's
// change must reach the writer's listens before the write's "ok"); a write's revision arrives
// on the watch, a read's may hold no key under the prefix, so the hub asks kv for a progress
// notification (sent once the watch has been sent everything up to the store's revision).
//
// WebSocket listens (ws_listen.go) are subscriptions like SSE streams, made with
// Hub.SubscribeNotify so that all the listens of a connection signal one channel: the
// connection's writing goroutine takes every listen's events (TryNext) and queues them, the
// take-and-queue step under one lock per connection, so a write that waited with WaitApplied and
// then takes for its connection under that lock queues its "ok" after its change. An untagged
// push is encoded once per Event (Event.ws), shared by every connection listening at that path.
//
// Rules on listeners: a listen (SSE or WebSocket) is judged before it starts, and again when
// the database's rules change (Hub.RulesChanged: the hub's watch sees the rules key, and
// signals a change before it queues any event of a later revision) or, on a WebSocket, when the
// connection's caller changes (auth, unauth, expiry); one no longer allowed is cancelled (SSE
// "cancel", WebSocket "c") and sent nothing more. ws_revoke.go says how no event slips through
// while a judgement is pending.
//
// Resume: a client reconnecting (after a server restart, or a dropped stream) gets a full put,
// as Firebase clients expect; there is no Last-Event-ID resume.
package rtdb
