// Package chaos turns a scenario's emulated network into Chaos Mesh NetworkChaos objects
// (chaos-mesh.org/v1alpha1) for the node pods of a Kubernetes run, and keeps a cluster's objects
// in step with that network as partition, heal and link faults arrive.
//
// Network holds the state (each link's current properties and the partitions in force) with the
// testbed's semantics: a path's one-way delay is the sum over its links, routed shortest-by-delay
// over the links that are up. Because a cluster's pod network is flat, the package does not emulate
// links hop by hop: it computes every node pair's end-to-end path and gives that pair one netem
// object (delay, jitter, loss), one bandwidth object and, when no route is left, one partition
// object. Sync makes a namespace's objects of a run exactly those; DeleteAll removes them.
//
// What a cluster cannot reproduce: the testbed's links are shared (flows through one link compete
// for its bandwidth and queue), whereas each pair here gets its own token bucket, sized from the
// route's narrowest link; and a route's jitter is the sum of its links' jitter, applied once.
//
// The package owns neither the node pods nor Chaos Mesh itself: it only selects pods by their
// labels (continuum.io/run and continuum.io/node) and needs Chaos Mesh installed to take effect.
package chaos
