// Package testbed emulates an edge-to-cloud continuum on one Linux host: every node is a network
// namespace whose eth0 (a veth pair) is attached to a userspace fabric (package fabric) that applies the
// topology's link delays, jitter, loss and bandwidth; every node has cgroups for CPU and memory
// limits and accounting. It starts and supervises processes inside nodes, injects faults
// (partitions, link changes, kill, pause, CPU quota), samples resources and models energy, and
// removes everything it created on exit or, after a crash, from its state file.
//
// It does not know what the processes are (package experiment decides) and it does not parse
// scenarios; its inputs are a Topology and Fault values (package platform's schema). Provider
// and Platform (platform.go) make it the experiment runner's first platform.
package testbed
