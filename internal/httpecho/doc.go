// Package httpecho is the echo server component (`continuum echo`): a small HTTP server whose
// per-request processing delay, CPU work and response size are set at start and changed at run
// time through PUT /admin/config, so experiments can emulate a slow or CPU-bound service.
//
// Endpoints: "/" (any method: reads the body, waits the delay, burns the CPU work, answers 200
// with a body naming the host and the request body size), "/healthz", and "/admin/config" (GET
// returns the settings as JSON, PUT changes any subset of them; bad input is a 400 naming the
// field and what is allowed). The request path reads the settings through an atomic pointer, so
// a change never blocks requests. It owns no measurement: clients measure (package loadgen).
package httpecho
