// Package platform is the seam between the experiment runner and the place a scenario runs:
// the Provider and Platform interfaces a place implements (bring a topology up and down, start
// and stop instances on its nodes, dial from inside a node, apply faults, sample resources) and
// the platform-neutral types they speak: the scenario's Topology and Fault schema, the Service
// an instance declares, the InstanceSpec it is started from, the Sample rows of samples.csv, the
// Endpoint string through which a component reaches the platform it runs on, and the optional
// NetworkReporter through which a platform that emulates the network reports its own health.
//
// It owns no implementation. The testbed (network namespaces and the userspace fabric on one
// host, package testbed) is the first; docs/architecture.md ("Platforms") says what a second
// (Kubernetes) must provide. It imports neither the runner nor any platform, so both sides
// depend on it and not on each other; it is light enough for the per-node proxy binary.
package platform
