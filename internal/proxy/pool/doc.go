// Package pool keeps, per service, the instances discovery reports and what the proxy knows
// of them: their estimates and why each is or is not in the service's QoS pool (pool.go,
// eval.go, record.go), the probes and the maintainer that wakes for what only time changes
// (probe.go, maintain.go), the choice of an instance for an attempt under the pool's lock
// (strategy.go's Pick), the services by name (router.go), and the connections to instances:
// keep-alive pools, spare connections dialed ahead (preconnect.go), the raw-socket checks that
// find a dead or chatty connection before a request is written to it (rawconn_linux.go), and
// writing a request to and reading an answer from one of them (wire.go).
//
// What it does not own: the QoS rules themselves (package qos), the configuration (package
// config), where instances come from (packages discovery and sources), and the server loop
// that accepts clients and relays their requests through these connections (package dataplane).
// The view it gives /debug/pools (view.go) is a snapshot taken under each service's lock.
package pool
