// Package gateway is the function platform's front door, as OpenFaaS' gateway is: it routes
// /function/NAME to the function's instances (the one with the fewest requests under way, as
// single-threaded instances want), counts invocations and requests in flight per function,
// exposes them as Prometheus metrics, and scales each function's instances through a
// Provider, by hand (the scale API) or by an autoscaler.
//
// Scaling never drops an accepted request: a request to a function with no instance (scaled
// to zero) waits for the first one to be ready; an instance being removed stops getting new
// requests first and is stopped only once those it has are answered.
package gateway
