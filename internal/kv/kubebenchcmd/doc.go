// Package kubebenchcmd is `continuum bench kube-store` (kube-apiserver on continuum kv vs etcd,
// internal/kv/kubebench).
//
// It is apart from kvcmd because it links client-go and the Kubernetes control plane's
// starter: the kv kind renders its command lines with kvcmd, so everything kvcmd imports is in
// every binary and test that loads the kv kind, and none of them needs Kubernetes. It is the
// one command package internal/systems/install imports directly, for the same reason.
package kubebenchcmd
