// Package auth says who a realtime database request comes from: database secrets, the
// emulator's "owner" and Firebase ID tokens (RS256 JWTs checked against published keys, or
// unsigned ones in emulator mode), verified once and cached until they expire. It carries the
// caller in a context (WithAuth, AuthFrom) and answers a bad credential or a denial with
// Firebase's 401 (WriteError).
//
// It does not judge what a caller may do: the security rules (package rules) are applied by
// the store (package store), which reads the caller from the context.
package auth
