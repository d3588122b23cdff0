// Package app is the system for users' own software: any program (kind `app-process`) or OCI
// container image (kind `app-container`, run by package oci with runc) placed on a scenario's nodes,
// driven by the same workloads, hit by the same faults and reported as Continuum's own kinds are
// (docs/bring-your-own.md). Its kinds live in app/kinds, its command (`continuum container-run`)
// in app/appcmd.
package app
