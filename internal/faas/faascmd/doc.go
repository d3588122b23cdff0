// Package faascmd is the function platform's command line: `continuum faas watchdog` (one
// function instance, classic or http mode), `continuum faas gateway` (routing, scaling,
// autoscalers, basic auth on /system/) and the gateway's clients `continuum faas list` and
// `continuum faas scale`, which take faas-cli's credential flags and environment.
package faascmd
