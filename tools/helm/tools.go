//go:build tools

// Package tools pins the helm release `make setup` builds for the chart's tests and the one-node
// cluster (scripts/setup.sh). A module of its own: helm's Kubernetes libraries need not match the
// control plane's in tools/kubernetes.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
