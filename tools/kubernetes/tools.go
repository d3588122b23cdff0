//go:build tools

// Package tools pins the Kubernetes programs `make setup` builds for the control-plane tests and the
// one-node cluster (scripts/setup.sh): kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet and kubectl at one release.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
