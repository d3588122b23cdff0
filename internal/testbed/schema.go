package testbed

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

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

// LoadTopology reads, defaults and validates a topology file. A scenario given by mistake
// (it has components, workloads or a topology of its own, and no nodes) is named as one, rather
// than refused key by key as a topology with unknown fields.
func LoadTopology(path string) (*Topology, error) {
	n, err := spec.ParseFile(path)
	if err != nil {
		return nil, err
	}
	if !spec.Has(n, "nodes") {
		for _, key := range []string{"topology", "topology_file", "components", "workloads"} {
			if spec.Has(n, key) {
				return nil, fmt.Errorf("%s is a scenario (it has %s:), not a topology: run it with `continuum run %s`; `testbed up -f` takes a topology file (nodes:, links:), such as the one its topology_file names", path, key, path)
			}
		}
	}
	return platform.LoadTopology(path)
}

// ParseTopology is LoadTopology on bytes already read; file names them in errors.
func ParseTopology(file string, data []byte) (*Topology, error) {
	return platform.ParseTopology(file, data)
}
