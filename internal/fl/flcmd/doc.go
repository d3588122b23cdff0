// Package flcmd is the fl system's command line: the group `continuum fl` with `fl plan` (the
// configuration the orchestrator would pick for a topology, and its reconfiguration decision
// when nodes leave or join; package fl/plan), `fl orchestrate` and `fl train` (package
// fl/orchestrator), and `continuum bench fl-plan` (package fl/flbench).
package flcmd
