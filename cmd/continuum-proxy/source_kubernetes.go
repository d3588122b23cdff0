//go:build !nokubernetes

package main

// The Kubernetes source (EndpointSlices, Pods, Nodes, metrics.k8s.io): the DaemonSet
// deployment needs it. -tags nokubernetes leaves client-go out.
import _ "github.com/continuum-project/continuum/internal/proxy/discovery/kubernetes"
