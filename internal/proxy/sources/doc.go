// Package sources is the proxy's glue to discovery: it runs the configured discovery sources
// (restarting one that stops), refuses instances whose IDs the proxy cannot carry, and unites
// their snapshots — the first source to report an instance ID wins, a node's load is the
// highest any source reports — handing each union to the proxy in the order it was formed.
// It also keeps what /readyz and /debug/pools show about each source.
//
// What it does not own: finding instances (package discovery and its sources, which register
// themselves by YAML key) or what the union is applied to (the pools, package pool).
package sources
