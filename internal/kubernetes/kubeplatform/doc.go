// Package kubeplatform is the Kubernetes platform of the experiment runner (package platform's
// second implementation, after the testbed): `continuum run --platform kubernetes` runs a
// scenario's nodes as pods of a cluster.
//
// Each scenario node becomes one pod (a "node pod") pinned to a cluster node, with the node's
// cpus and memory as its limits, running the project's image with `continuum kubernetes-agent`
// (package agent) as its only process. The agent starts the node's instances as processes, so
// that an instance's command line, exit code, SIGTERM-then-SIGKILL stop, restart as a new run
// and process-group signals (kill, pause, resume) mean what they mean on the testbed. A headless
// Service per node, named as the node, makes node names resolve to the pods' IPs everywhere.
//
// The runner reaches each agent through the API server's port-forward: the agent listens on
// 127.0.0.1 in its pod, so nothing in the cluster but a port-forward (RBAC pods/portforward)
// can reach it. Through that one connection go instance starts and signals, their stdout and
// stderr (streamed into the run's logs as on the testbed), the instance's output directory
// (pushed before the start, pulled back before Done closes: no tar binary in the image, no
// kubectl cp), dials from inside the node (readiness, kinds' Set) and resource samples.
//
// Link delay, jitter, loss, bandwidth and partitions become Chaos Mesh NetworkChaos objects
// (package chaos), kept in step with the scenario's link faults. A scenario that needs them on
// a cluster without Chaos Mesh is refused before anything starts, naming what to install.
//
// Components that start instances of their own (the faas gateway) do so through PodClient, the
// platform's component-side client (platform.Instances, registered as "kubernetes"): each
// instance is a pod beside its node's pod, created with the node pod's ServiceAccount, which
// may manage pods in the run's namespace and read Nodes, nothing more (access.go). Python paths
// of the runner's clone in an instance's command line are rewritten to the images' (paths.go).
//
// Every object a run creates carries app.kubernetes.io/managed-by=continuum and
// continuum.io/run=<run>; Down deletes them, and Cleanup does for a run whose runner died.
package kubeplatform
