// Package proxybench measures what the proxy costs (`continuum bench proxy`): the latency it
// adds to a call at several open-loop rates, and its CPU and memory, by calling an echo
// upstream directly and through the continuum-proxy binary, alternately, in one run. It owns
// the method and the Markdown of docs/benchmarks/proxy.md; the load engine is package loadgen.
package proxybench
