package testbed

import "github.com/continuum-project/continuum/internal/platform"

// The testbed's inputs are the platform-neutral scenario schema of package platform (the
// topology a scenario declares, the faults its events apply, the services its instances
// declare): the same scenario runs on every platform. These names let code that drives the
// testbed alone (its CLI, benchmarks, tests) keep to one import.
type (
	Topology  = platform.Topology
	Node      = platform.Node
	Link      = platform.Link
	LinkProps = platform.LinkProps
	Power     = platform.Power
	Fault     = platform.Fault
	Service   = platform.Service
	Sample    = platform.Sample
)

// Fault actions (see package platform).
const (
	FaultPartition = platform.FaultPartition
	FaultHeal      = platform.FaultHeal
	FaultLink      = platform.FaultLink
	FaultKill      = platform.FaultKill
	FaultPause     = platform.FaultPause
	FaultResume    = platform.FaultResume
	FaultCPU       = platform.FaultCPU
	FaultRestart   = platform.FaultRestart
)

// FaultActions lists the valid fault actions, for error messages.
var FaultActions = platform.FaultActions

// LoadTopology reads, defaults and validates a topology file.
func LoadTopology(path string) (*Topology, error) { return platform.LoadTopology(path) }

// ParseTopology is LoadTopology on bytes already read; file names them in errors.
func ParseTopology(file string, data []byte) (*Topology, error) {
	return platform.ParseTopology(file, data)
}
