// Package proxy is the per-node QoS-aware HTTP proxy (`continuum proxy`, QEdgeProxy in
// seeds/004 §4): it routes each request to an instance of the service the request names (the
// X-Continuum-Service header, or the Host header's first label), keeping per service a QoS
// pool of the instances expected to meet the service's requirement, and offers round-robin,
// random and proximity (proxy-mity) routing as baselines.
//
// This package only wires the rooms below together (New, Serve, Run in run.go) and serves the
// admin endpoints (/metrics, /healthz, /readyz, /debug/pools) with their token (admin.go,
// adminauth.go). Its tests are the end-to-end ones: a whole proxy against real instances.
//
// The rooms, each with one job: dataplane (the HTTP/1.1 server loop and the forwarding path),
// pool (instances, estimates, pools, probes, Pick, connections to instances), qos
// (requirements, the estimator window, the selection rules), http1 (the wire format the loop
// parses), config (Config, LoadConfig, validation), metrics (the Prometheus series), sources
// (the union of discovery snapshots), and discovery with its sources, which register
// themselves by YAML key so that nothing here imports them.
//
// docs/proxy.md explains the decisions for operators.
package proxy
