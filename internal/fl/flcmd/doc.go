// Package flcmd is the fl system's command line: the group `continuum fl`, whose subcommands
// register under Group (`continuum fl plan`: the configuration the orchestrator would pick for
// a topology, and its reconfiguration decision when nodes leave or join; the orchestrator adds
// `continuum fl orchestrate`), and `continuum bench fl-plan` (package fl/flbench).
package flcmd
