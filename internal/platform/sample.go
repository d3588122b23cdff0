package platform

import "time"

// Sample is one row of resource measurements, a row of samples.csv (internal/results): a node
// (Component empty) or an instance on it. Cumulative fields count from the sampler's start.
type Sample struct {
	T          time.Duration // since the sampler started
	Node       string
	Component  string
	CPUSeconds float64 // cumulative CPU time
	CPUUtil    float64 // cores used over the last interval
	RSS        int64   // resident anonymous memory
	Disk       int64   // bytes allocated by the declared data dirs
	RxBytes    uint64  // node rows: bytes delivered to the node
	TxBytes    uint64  // node rows: bytes the node sent
	RxPackets  uint64  // node rows: packets delivered to the node
	TxPackets  uint64  // node rows: packets the node sent (what its fabric forwarded)
	PowerW     float64 // node: modelled power; component: its share of the dynamic power
	EnergyJ    float64 // node: total incl. idle; component: dynamic only
	IdleJ      float64 // node rows: idle part of EnergyJ
}
