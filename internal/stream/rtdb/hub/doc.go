// Package hub turns one kv watch over every realtime database into per-listener
// notifications: the API the SSE and WebSocket protocols share (Subscribe, Events,
// WaitApplied, RulesChanged).
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
// Rules on listeners: a listen (SSE or WebSocket) is judged before it starts, and again when
// the database's rules change (Hub.RulesChanged: the hub's watch sees the rules key, and
// signals a change before it queues any event of a later revision) or, on a WebSocket, when the
// connection's caller changes (auth, unauth, expiry); one no longer allowed is cancelled (SSE
// "cancel", WebSocket "c") and sent nothing more. Package ws (revoke.go) says how no event
// slips through while a judgement is pending.
//
// It does not own the protocols that deliver events (packages sse and ws) nor who may listen
// (the rules are judged by package store; the hub only signals that they changed).
package hub
