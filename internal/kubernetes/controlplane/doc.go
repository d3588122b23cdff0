// Package controlplane starts a real Kubernetes control plane as processes: kube-apiserver
// against given etcd v3 endpoints (real etcd or continuum kv), and optionally
// kube-controller-manager and kube-scheduler. It owns what they need to start: a private PKI
// (CA, serving certificate, service-account keys, client certificates), kubeconfig files, free
// ports, the binaries' lookup, and waiting until each one is healthy.
//
// It does not start the store (the caller passes its endpoints), kubelets or containers (see
// internal/kubernetes/cluster), and it imports no system: tests that run it on kv live in the
// kv system (internal/kv/compat) and in the proxy's discovery tests.
//
// Every process runs in its own process group with all its output in a log file under
// Config.Dir; Stop kills them all, and a start that fails returns an error with the tail of
// the failing process's log.
package controlplane
