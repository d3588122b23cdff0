package experiment

import (
	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

// SchemaVersion is the scenario schema this binary reads (`version:` in the file).
const SchemaVersion = 1

// Scenario is one experiment: a topology, the components deployed on it, the workloads that drive
// them, a timeline of events, and how often / with which parameter combinations to run it.
type Scenario struct {
	Version     int    `yaml:"version"`
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Seed        int64  `yaml:"seed,omitempty"`
	// Duration of one run, warm-up included.
	Duration spec.Duration `yaml:"duration"`
	// Warmup is excluded from statistics (but kept in time series).
	Warmup  spec.Duration `yaml:"warmup,omitempty"`
	Repeats int           `yaml:"repeats,omitempty"` // default 1
	// Topology is inline, or loaded from TopologyFile (relative to the scenario file).
	Topology     *platform.Topology `yaml:"topology,omitempty"`
	TopologyFile string             `yaml:"topology_file,omitempty"`
	Components   []Instance         `yaml:"components,omitempty"`
	Workloads    []Instance         `yaml:"workloads,omitempty"`
	Events       []Event            `yaml:"events,omitempty"`
	// Sweep maps a parameter path (same syntax as --set, e.g. "workloads.load.config.rate") to the
	// values it takes; the runner runs every combination (cartesian product) Repeats times.
	Sweep map[string][]yaml.Node `yaml:"sweep,omitempty"`
	// SweepLabels names a sweep path's values for reports, one label per value in order (e.g.
	// "continuum kv" and "etcd" for two component lists). Paths without labels get derived ones
	// when their values are lists or mappings (see sweepLabels).
	SweepLabels map[string][]string `yaml:"sweep_labels,omitempty"`

	// File is the path the scenario was read from (for relative paths and error messages).
	File string `yaml:"-"`
	// Warnings are what loads but should change, one line each with file:line (a kind's old
	// name): `continuum run` prints them (Options.Warnings).
	Warnings []string `yaml:"-"`
}

// Instance is a component or a workload placed on a node.
type Instance struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"`
	Node string `yaml:"node"`
	// Config is kind-specific; it is decoded strictly into the kind's config type (see Kind).
	Config yaml.Node `yaml:"config,omitempty"`
	// Service declares a component an instance of a service (see ServiceDecl).
	Service *ServiceDecl `yaml:"service,omitempty"`
	// Deferred components are not started with the run; an event with action start starts them.
	Deferred bool `yaml:"deferred,omitempty"`
	// ExpectFailures lets a workload get nothing through (every request failed, or none was
	// sent; its command exits loadgen.ExitNothingThrough) without failing the run: for
	// experiments whose point is an outage. Otherwise such a workload fails the run.
	// Workloads only.
	ExpectFailures bool `yaml:"expect_failures,omitempty"`
	// DecodedConfig is the result of decoding Config into the kind's config type (set by Validate).
	DecodedConfig any `yaml:"-"`
}

// Event is one entry of the timeline. Exactly one trigger (At or AfterRequests) is set.
type Event struct {
	At            *spec.Duration `yaml:"at,omitempty"`
	AfterRequests int64          `yaml:"after_requests,omitempty"`
	// Action is one of the platform's faults (partition, heal, link, kill, pause, resume, cpu, restart),
	// "set" (change a component's config at run time, if its kind supports it) or "start" (start
	// a deferred component).
	Action string `yaml:"action"`
	// Fault fields shared with `continuum testbed fault` (target node/component, link, groups, ...).
	platform.Fault `yaml:",inline"`
	// Config holds the changes of a "set" action; decoded by the component's kind.
	Config yaml.Node `yaml:"config,omitempty"`

	Line int `yaml:"-"` // line in the scenario file, for messages
}
