// Package kinds is the HTTP kinds' adapter to experiments: the component "http-echo"
// (`continuum echo`, package httpecho: a service instance whose delay, CPU work and response size
// change at run time) and the workload "http-load" (`continuum load http`, package
// loadgen/httptarget) against URLs or any component with an http endpoint, with its QoS and
// per-instance figures for summary.json.
package kinds
