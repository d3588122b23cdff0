// Package control is the Go side of an FL aggregator's control API: the HTTP/JSON server that
// python/src/continuum_fl/control.py runs beside every aggregator (GET /status, POST /config,
// POST /stop, each with the aggregator's bearer token). The orchestrator steers running
// aggregators through it: a new client count, epochs or local rounds from the next round, a
// graceful stop, and the readiness probe after a start.
//
// It owns the wire: the paths, the typed bodies (Settings, Status) and their JSON names, which a
// test holds to python/tests/testdata/fl-control/contract.json, the fixture the Python side's
// tests read too. It decides nothing: which aggregator to configure, with what, and how long to
// wait for one are the orchestrator's.
package control
