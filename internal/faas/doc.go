// Package faas is Continuum's function platform for edge analytics (seeds/001): functions
// written as OpenFaaS python3-http handlers run in one of three modes, each instance behind
// the same HTTP interface (/_/health, Prometheus metrics, exec and write timeouts).
//
//   - micro: a long-lived server exposed directly, the seed's microservice (Flask + Waitress
//     with one worker thread, or Continuum's own Python server);
//   - classic: the watchdog forks and execs one process per request, stdin to stdout, as
//     OpenFaaS' classic watchdog does;
//   - http: the watchdog keeps one upstream server process and proxies to it, as of-watchdog's
//     http mode does.
//
// This package holds what the modes share: the modes' names and how a Python handler is found
// and started (the venv `make setup` builds, the runtimes in python/src). The watchdog is in
// faas/watchdog; the experiment kinds in faas/kinds.
package faas
