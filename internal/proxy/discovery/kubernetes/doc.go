// Package kubernetes is the discovery source for a proxy running in a Kubernetes (or K3s)
// cluster. It watches, with client-go shared informers, the discovery.k8s.io/v1 EndpointSlices
// of Services (one instance per endpoint address, on the port named "http" or else the first),
// the Pods behind them (instance attributes from `continuum.io/` labels and annotations) and the
// Nodes (allocatable CPU and memory), and polls metrics.k8s.io NodeMetrics, when the cluster
// serves it, for node loads.
//
// It owns the translation from Kubernetes objects to discovery snapshots; it does not decide
// which instance serves a request (package proxy) and does not change anything in the cluster:
// it only needs get, list and watch (see docs/proxy-discovery.md for the RBAC rules).
package kubernetes
