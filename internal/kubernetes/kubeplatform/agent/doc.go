// Package agent is the node agent of the Kubernetes platform: a small HTTP server (JSON, stdlib
// net/http) that runs inside a node pod, and the Go client the runner uses to reach it through the
// API server's port-forward.
//
// The agent starts a scenario node's instances as processes, each in its own process group, keeps
// their stdout/stderr in files that it follows for readers, signals and stops them, copies file
// trees in and out of the pod as tar streams, opens connections from inside the pod, and measures
// the pod (CPU, memory, disk, network). It owns nothing of Kubernetes itself: creating the pod,
// the port-forward and link conditions belong to the platform (package kubeplatform) and Chaos
// Mesh. The agent listens on 127.0.0.1 only and has no authentication: only a port-forward, which
// the API server authorizes, reaches it.
package agent
