// Package discovery tells the proxy which instances of which services exist, where they run and
// how loaded their nodes are. Every source (a static YAML file, the testbed's registry, Kubernetes
// EndpointSlices, a kv/etcd prefix) implements Source and delivers whole snapshots, so the proxy
// never has to merge partial updates from different mechanisms.
//
// It owns the data types and the sources; it does not decide which instance serves a request
// (that is package proxy).
package discovery

import "context"

// Instance is one reachable copy of a service.
type Instance struct {
	// ID names the instance uniquely across all services (e.g. "s3", or a Pod name). The proxy
	// reports it in the X-Continuum-Instance response header.
	ID string `json:"id" yaml:"id"`
	// Service is the name clients route by (Host header's first label or X-Continuum-Service).
	Service string `json:"service" yaml:"service"`
	// URL is the instance's base URL, scheme and host:port (e.g. "http://10.0.0.3:8080").
	URL string `json:"url" yaml:"url"`
	// Node is the node the instance runs on; it keys into Snapshot.Nodes and is what the proxy
	// probes for the initial latency estimate.
	Node string `json:"node,omitempty" yaml:"node,omitempty"`
	// Attributes are free-form properties that a service's QoS requirement may constrain
	// (e.g. accuracy=0.97, tier=edge). Values are strings; requirements parse numbers as needed.
	Attributes map[string]string `json:"attributes,omitempty" yaml:"attributes,omitempty"`
	// Ready is false for an instance that exists but must not receive traffic (e.g. a Pod that
	// is not ready). Sources that cannot tell set it to true.
	Ready bool `json:"ready" yaml:"ready"`
}

// NodeLoad is a node's resource use as a fraction of what it may use (0..1, or more when over a
// limit). A zero value means "unknown", which the proxy treats as not overloaded.
type NodeLoad struct {
	CPU    float64 `json:"cpu" yaml:"cpu"`
	Memory float64 `json:"memory" yaml:"memory"`
}

// Snapshot is the complete view a source has at one moment.
type Snapshot struct {
	Instances []Instance          `json:"instances"`
	Nodes     map[string]NodeLoad `json:"nodes,omitempty"`
}

// Source delivers snapshots. Run calls update with the first complete snapshot as soon as it
// has one and again after every change, never concurrently, and returns when ctx is done (nil)
// or when the source cannot go on (an error naming what failed). A source whose backend is
// temporarily unreachable keeps its last snapshot and retries rather than returning.
type Source interface {
	// Name describes the source for logs and /debug/pools (e.g. "file:/etc/continuum/proxy.yaml").
	Name() string
	Run(ctx context.Context, update func(Snapshot)) error
}
