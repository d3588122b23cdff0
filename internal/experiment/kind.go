package experiment

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Role says whether a kind is a component (a server deployed on a node) or a workload (a client
// that drives components and measures them).
type Role string

const (
	RoleComponent Role = "component"
	RoleWorkload  Role = "workload"
)

// Kind is a component or workload type a scenario can name. Kinds register themselves in init()
// with Register; the runner only talks to this interface, so adding a kind never touches it.
type Kind struct {
	Name    string
	Role    Role
	Summary string
	// NewConfig returns a pointer to the kind's config struct, pre-filled with defaults. The
	// scenario's `config:` mapping is decoded into it strictly (unknown fields are errors).
	NewConfig func() any
	// Validate checks a decoded config beyond types (ranges, required fields). Optional.
	Validate func(cfg any) error
	// Command builds the process the testbed starts on the instance's node.
	Command func(env Env, cfg any) (Command, error)
	// Set applies a run-time change (a "set" event) to a running instance. Optional: nil means the
	// kind cannot be changed at run time. change is the event's `config:` mapping.
	Set func(ctx context.Context, env Env, cfg any, change *yaml.Node) error
	// Metrics reads what the kind's instances reported themselves during a finished run (their
	// logs, their output directories), as metric -> field -> value like the workloads' stats,
	// for summary.json. It is for what only the components can see, such as when replicas
	// converged after a heal. Optional; called once per run with all instances of the kind.
	Metrics func(out RunOutput) map[string]map[string]float64
}

// RunOutput is what a finished run left for a kind's Metrics.
type RunOutput struct {
	T0        time.Time    // wall time the run's clock (events' At) started
	Events    []FiredEvent // the events that fired without error, in order
	Instances []InstanceOutput
}

// InstanceOutput is one instance's output of a run.
type InstanceOutput struct {
	Name, Node string
	Config     any    // the decoded config (read only)
	Log        string // path of its stderr log
	OutDir     string
}

// FiredEvent is an event of events.csv that fired without error.
type FiredEvent struct {
	At     time.Duration // from RunOutput.T0
	Action string
	Target string
}

// Env is what a kind knows about where its instance runs.
type Env struct {
	Instance string            // instance name from the scenario
	Node     string            // node the instance runs on
	Nodes    map[string]string // node name -> IPv4 address (names also resolve inside every node)
	// Components maps component instance names to their node, for workloads that target them.
	Components map[string]string
	// ComponentConfigs maps component instance names to their decoded configs (read only).
	ComponentConfigs map[string]any
	OutDir           string // per-instance results directory (workloads write their files here)
	Binary           string // absolute path of the continuum binary
	Seed             int64
	Duration         time.Duration // run duration, warm-up included
	Warmup           time.Duration
	// Dial opens a connection from inside the instance's node (for Set and readiness checks).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Testbed is the name of the run's testbed and StateDir the directory of its state and
	// control socket, for components that talk to the testbed (the proxy's discovery).
	Testbed  string
	StateDir string
}

// Command is a process to start inside a node.
type Command struct {
	Args []string // Args[0] is the program (absolute path or looked up in PATH)
	Env  []string // extra KEY=VALUE entries
	Dir  string   // working directory (default: the instance's results dir)
	// DataDirs are directories whose size the samplers report as the instance's disk usage.
	DataDirs []string
	// ReadyAddr, if set, is a host:port inside the node that accepts TCP connections once the
	// instance is ready; the runner waits for it before starting workloads.
	ReadyAddr string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]*Kind{}
)

// Register adds a kind; it panics on a duplicate name or a missing field (a programming error).
func Register(k *Kind) {
	if k.Name == "" || k.NewConfig == nil || k.Command == nil || (k.Role != RoleComponent && k.Role != RoleWorkload) {
		panic(fmt.Sprintf("experiment.Register: incomplete kind %q", k.Name))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[k.Name]; dup {
		panic(fmt.Sprintf("experiment.Register: duplicate kind %q", k.Name))
	}
	registry[k.Name] = k
}

// LookupKind returns the registered kind with that name.
func LookupKind(name string) (*Kind, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	k, ok := registry[name]
	return k, ok
}

// KindNames lists the registered kinds of a role, sorted, for error messages and help.
func KindNames(role Role) []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var names []string
	for n, k := range registry {
		if k.Role == role {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// ComponentNode returns the node of component instance name, or an error listing the components
// there are (for workloads that target a component by name).
func (env Env) ComponentNode(name string) (string, error) {
	if node, ok := env.Components[name]; ok {
		return node, nil
	}
	names := make([]string, 0, len(env.Components))
	for n := range env.Components {
		names = append(names, n)
	}
	sort.Strings(names)
	return "", fmt.Errorf("unknown component %q (components: %s)", name, strings.Join(names, ", "))
}
