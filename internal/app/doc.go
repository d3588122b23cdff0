// Package app is the system for users' own software: any program (kind `process`) placed on a
// scenario's nodes, driven by the same workloads, hit by the same faults and reported as
// Continuum's own kinds are (docs/bring-your-own.md). It has no product package of its own:
// the user's program is the product. Its kinds live in app/kinds.
package app
