// Package agent is the node agent of the Kubernetes platform: `continuum kubernetes-agent`, the
// one process of a node pod, and its Go client, which the runner uses through a port-forward.
//
// The agent does for a node pod what the testbed does for a network namespace: it starts the
// node's instances as processes, each in its own process group (so that a stop, a kill, a pause
// reach everything an instance started), keeps their stdout and stderr in files and streams them
// to whoever asks from the first byte, says how each exited, signals them, restarts them as new
// runs under the same name, moves files in and out as tar streams (the image has no tar binary),
// dials from inside the pod (readiness checks and run-time changes reach 127.0.0.1 there), and
// measures CPU, memory, disk and network.
//
// It listens on the pod's loopback only: nothing but a port-forward through the API server (which
// needs RBAC on pods/portforward) reaches it, because it runs whatever it is asked to. Its API is
// HTTP with JSON bodies, versioned under /v1; the Client is its only intended user.
package agent
