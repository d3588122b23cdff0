package platform

import "github.com/continuum-project/continuum/internal/spec"

// Topology is the emulated continuum: nodes (network namespaces with resource limits) and the links
// between them. A path's one-way delay is the sum over its links, routed shortest-by-delay.
type Topology struct {
	// Network is the IPv4 subnet node addresses come from (default 10.77.0.0/16); nodes get
	// addresses in declaration order starting at .1, unless a node sets Address.
	Network string `yaml:"network,omitempty" json:"network,omitempty"`
	// MTU of every node's emulated interface (default 1500).
	MTU   int    `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	Nodes []Node `yaml:"nodes" json:"nodes"`
	Links []Link `yaml:"links,omitempty" json:"links,omitempty"`
}

// Node is one emulated machine.
type Node struct {
	Name string `yaml:"name" json:"name"`
	// Address optionally pins the node's IPv4 address inside Network.
	Address string `yaml:"address,omitempty" json:"address,omitempty"`
	// CPUs is the CPU quota in cores (0 = unlimited).
	CPUs float64 `yaml:"cpus,omitempty" json:"cpus,omitempty"`
	// Memory is the memory limit (0 = unlimited).
	Memory spec.Bytes `yaml:"memory,omitempty" json:"memory,omitempty"`
	// Power parameterises the energy model; zero means the defaults (see docs/testbed.md).
	Power Power `yaml:"power,omitempty" json:"power,omitempty"`
	// Labels are free-form attributes (tier: edge, region: eu) for scenarios and components.
	Labels map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// Power is the linear utilisation power model of a node: W = IdleW + u*(MaxW-IdleW).
type Power struct {
	IdleW float64 `yaml:"idle_w,omitempty" json:"idle_w,omitempty"`
	MaxW  float64 `yaml:"max_w,omitempty" json:"max_w,omitempty"`
}

// Link is a bidirectional link; its properties apply to each direction independently.
type Link struct {
	Between []string `yaml:"between" json:"between"` // exactly two distinct node names
	// LinkProps are the initial properties of the link.
	LinkProps `yaml:",inline" json:",inline"`
}

// LinkProps are the emulated properties of one link direction. Pointer-free so that zero values mean
// "no delay / no jitter / no loss / unlimited bandwidth".
type LinkProps struct {
	Delay     spec.Duration  `yaml:"delay,omitempty" json:"delay,omitempty"`         // one-way
	Jitter    spec.Duration  `yaml:"jitter,omitempty" json:"jitter,omitempty"`       // uniform +-jitter
	Loss      spec.Percent   `yaml:"loss,omitempty" json:"loss,omitempty"`           // per direction, per packet
	Bandwidth spec.Bandwidth `yaml:"bandwidth,omitempty" json:"bandwidth,omitempty"` // bits/s, 0 = unlimited
	// Queue is the maximum number of packets waiting for the bandwidth limit (default 1000, like netem).
	Queue int `yaml:"queue,omitempty" json:"queue,omitempty"`
}
