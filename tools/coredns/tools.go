//go:build tools

// Package tools pins the CoreDNS release `make setup` builds for the one-node cluster's DNS
// (internal/kubernetes/cluster): Services and StatefulSet members resolve by name as on any
// cluster.
package tools

import _ "github.com/coredns/coredns"
