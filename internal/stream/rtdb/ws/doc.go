// Package ws serves the Firebase Realtime Database's WebSocket protocol (version 5, as the
// JS SDK speaks it, on /.ws): listens, writes and transactions (compare by the SDK's hash of a
// value, hash.go), onDisconnect writes, and auth, with every listen judged by the security
// rules and revoked when they or the caller change (revoke.go). It also serves the dashboard
// (/.dashboard), a live page on the JS SDK.
//
// Listens (listen.go) are subscriptions like SSE streams, made with
// Hub.SubscribeNotify so that all the listens of a connection signal one channel: the
// connection's writing goroutine takes every listen's events (TryNext) and queues them, the
// take-and-queue step under one lock per connection, so a write that waited with WaitApplied and
// then takes for its connection under that lock queues its "ok" after its change. An untagged
// push is encoded once per Event (Event.ws), shared by every connection listening at that path.
//
// It does not own the events (package hub), the data or the rules (package store), or
// credentials (package auth).
package ws
