// Package sse is REST streaming (Server-Sent Events) of the Firebase Realtime Database: a GET
// with "Accept: text/event-stream" gets a put of the whole value, then a put or patch per
// change from the listener hub, keep-alives when idle, and cancel or auth_revoked when the read
// permission ends (grant.go judges it by the security rules, again whenever they change). It
// also holds the client side, EventReader, which reads such a stream (tests, load generators
// and benchmarks use it).
//
// Resume: a client reconnecting (after a server restart, or a dropped stream) gets a full put,
// as Firebase clients expect; there is no Last-Event-ID resume.
//
// It does not own the events (package hub), the data or the rules (package store).
package sse
