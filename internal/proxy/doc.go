// Package proxy is the per-node QoS-aware HTTP proxy (`continuum proxy`, QEdgeProxy in
// seeds/004 §4): it routes each request to an instance of the service the request names (the
// X-Continuum-Service header, or the Host header's first label), keeping per service a QoS
// pool of the instances expected to meet the service's requirement, and offers round-robin,
// random and proximity (proxy-mity) routing as baselines.
//
// What it owns: the configuration (config.go, configfile.go), attribute requirements
// (requirement.go), per-instance estimates (estimator.go), pool maintenance (pool.go,
// maintain.go), selection (strategy.go), the data plane's HTTP/1.1 server loop (serve.go,
// forward.go, answer.go, body.go, httphead.go) with net/http's server behind it for what the
// loop hands over (handler.go), the forwarding path to instances (transport.go, conns.go,
// preconnect.go), metrics and /debug/pools (metrics.go, admin.go), and the union of discovery
// snapshots (sources.go). What it does not: finding instances — that is package discovery and its
// sources, which register themselves by YAML key so that this package imports none of them.
//
// docs/proxy.md explains the decisions for operators.
package proxy
