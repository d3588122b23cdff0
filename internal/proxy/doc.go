// Package proxy is the per-node QoS-aware HTTP proxy (`continuum proxy`, QEdgeProxy in
// seeds/004 §4): it routes each request to an instance of the service the request names (the
// X-Continuum-Service header, or the Host header's first label), keeping per service a QoS
// pool of the instances expected to meet the service's requirement, and offers round-robin,
// random and proximity (proxy-mity) routing as baselines.
//
// This package is the data plane and its wiring: the HTTP/1.1 server loop (serve.go,
// forward.go, answer.go) with net/http's server behind it for what the loop hands over
// (handler.go), the forwarding path that tries instances and records each attempt
// (transport.go), the admin endpoints and their token (admin.go, adminauth.go), and Run/New,
// which wire the packages below together (run.go).
//
// The rooms below it, each with one job: config (Config, LoadConfig, validation), qos
// (requirements, the estimator window, the selection rules), pool (instances, estimates,
// pools, probes, Pick, connections to instances), http1 (the wire format the loop parses),
// metrics (the Prometheus series), sources (the union of discovery snapshots), and
// discovery with its sources, which register themselves by YAML key so that nothing here
// imports them.
//
// docs/proxy.md explains the decisions for operators.
package proxy
