// Package metrics is the proxy's Prometheus metrics (continuum_proxy_*): the series the data
// plane, the pools and discovery update, in a registry of the proxy's own that its admin
// listener serves at /metrics.
//
// What it does not own: serving them (the root package's admin handler), deciding what is
// counted (its callers), or the label values, which come from discovery and from fixed sets.
package metrics
