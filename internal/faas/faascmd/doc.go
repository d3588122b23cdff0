// Package faascmd is the function platform's command line: `continuum faas watchdog` (one
// function instance, classic or http mode) and `continuum faas gateway` (routing, scaling,
// autoscalers).
package faascmd
