// Package dataplane is the proxy's data plane: the HTTP/1.1 server loop that accepts client
// connections, reads each request head (package http1), routes it to a service and relays
// the request and its answer (serve.go, forward.go, answer.go); the hand-over of what the loop
// does not serve to net/http's server (handoff.go) and the http.Handler behind it
// (handler.go); and the forwarding path both share, which picks instances from the service's
// pool, tries them within the service's timeout and retries, and records each attempt
// (transport.go). It also caps the requests in flight and drains them on shutdown.
//
// What it does not own: which instances exist and which are in the pool (package pool), the
// connections to instances (pool's ConnPool), metrics (package metrics), or wiring and
// listeners (package proxy's New, Serve and Run).
package dataplane
