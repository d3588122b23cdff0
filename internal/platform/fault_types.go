package platform

import "github.com/continuum-project/continuum/internal/spec"

// Fault actions, usable from `continuum testbed fault` and scenario events.
const (
	FaultPartition = "partition" // cut Link, isolate Node, or split into Groups
	FaultHeal      = "heal"      // undo all partitions (or the one matching Link/Node/Groups)
	FaultLink      = "link"      // change Link's delay/jitter/loss/bandwidth (unset fields unchanged)
	FaultKill      = "kill"      // SIGKILL every process of Node (or of Component)
	FaultPause     = "pause"     // SIGSTOP every process of Node
	FaultResume    = "resume"    // SIGCONT every process of Node
	FaultCPU       = "cpu"       // set Node's CPU quota to CPUs cores (0 = unlimited)
	FaultRestart   = "restart"   // restart Component (stop gracefully, then start again)
)

// FaultActions lists the valid actions, for error messages.
var FaultActions = []string{FaultPartition, FaultHeal, FaultLink, FaultKill, FaultPause, FaultResume, FaultCPU, FaultRestart}

// Fault is one fault injection. Which fields apply depends on Action; Validate says which.
type Fault struct {
	Action    string     `yaml:"-" json:"action"`
	Node      string     `yaml:"node,omitempty" json:"node,omitempty"`
	Component string     `yaml:"component,omitempty" json:"component,omitempty"`
	Link      []string   `yaml:"link,omitempty" json:"link,omitempty"`     // [a, b]
	Groups    [][]string `yaml:"groups,omitempty" json:"groups,omitempty"` // split: nodes in different groups cannot talk
	// Link property changes (FaultLink); nil = unchanged.
	Delay     *spec.Duration  `yaml:"delay,omitempty" json:"delay,omitempty"`
	Jitter    *spec.Duration  `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	Loss      *spec.Percent   `yaml:"loss,omitempty" json:"loss,omitempty"`
	Bandwidth *spec.Bandwidth `yaml:"bandwidth,omitempty" json:"bandwidth,omitempty"`
	// CPUs for FaultCPU.
	CPUs *float64 `yaml:"cpus,omitempty" json:"cpus,omitempty"`
}
