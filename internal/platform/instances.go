package platform

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Instances is a platform's component-side client: what a component that runs on a platform
// uses to run instances of its own there (the faas gateway its function instances, the FL
// orchestrator its aggregators and clients) and to observe them and the nodes. Each platform
// registers its client under its name (RegisterInstances) and a component gets the one of the
// endpoint it was given (InstancesFor), so no component knows a platform: the testbed's client
// starts processes in its nodes through its control socket.
//
// Its methods are safe for concurrent use.
type Instances interface {
	// Start runs an instance of s on s.Node and returns the host at which other instances
	// and components reach its ports. Of s, a client honours what crosses a process
	// boundary (Name, Node, Args, Env, Dir, LogDir, DataDirs, CPUs, Memory, StopSignal,
	// Service) and refuses the rest (Stdout; Image and ExecIn where it runs no images). A name in use is taken over: the instance holding it
	// is stopped first.
	Start(ctx context.Context, s InstanceSpec) (host string, err error)
	// Stop stops the named instance (SIGTERM, SIGKILL after grace) and forgets it. An
	// instance that is not there is not an error.
	Stop(ctx context.Context, name string, grace time.Duration) error
	// State is what runs and the nodes, now.
	State(ctx context.Context) (State, error)
	// Addr is the address at which port of a component on node is reached from other nodes.
	Addr(node string, port int) string
	// SharesNode says whether an instance started on node runs in the node itself, sharing
	// its network and filesystem with the components running there (the testbed: a node's
	// processes share its network namespace and the host's files), so that it may listen on
	// loopback only and be reached there (nothing on another node reaches it then), and
	// exchange files and unix sockets with them. False where instances run apart (pods of
	// their own).
	SharesNode(node string) bool
}

// State is a snapshot of a platform's instances and nodes.
type State struct {
	Instances []InstanceState
	Nodes     []NodeState
}

// InstanceState is one instance as the platform sees it.
type InstanceState struct {
	Name, Node string
	Running    bool
	// Ended says how an instance that is not running ended: "exit 1", "signal killed".
	Ended string
	// CPUSeconds is the CPU time it used (a running instance's, counted by the platform).
	CPUSeconds float64
}

// NodeState is one node as the platform sees it.
type NodeState struct {
	Name   string
	Labels map[string]string
	// Isolated is true while no other node reaches it (a partition of the node).
	Isolated bool
}

// Instance finds the named instance.
func (s State) Instance(name string) (InstanceState, bool) {
	i := slices.IndexFunc(s.Instances, func(in InstanceState) bool { return in.Name == name })
	if i < 0 {
		return InstanceState{}, false
	}
	return s.Instances[i], true
}

// InstancesConstructor builds a platform's client from an endpoint's address (the part after
// "<platform>:"). It does not connect.
type InstancesConstructor func(address string) (Instances, error)

var (
	instancesMu sync.RWMutex
	instances   = map[string]InstancesConstructor{}
)

// RegisterInstances makes the client of platform name available to components; a platform
// package calls it from init. It panics on a second registration of a name.
func RegisterInstances(name string, c InstancesConstructor) {
	instancesMu.Lock()
	defer instancesMu.Unlock()
	if _, dup := instances[name]; dup {
		panic("platform: instances client " + name + " registered twice")
	}
	instances[name] = c
}

// InstancesFor is the client of the platform endpoint names ("<platform>:<address>"), or an
// error naming the platform and the ones that have a client.
func InstancesFor(endpoint string) (Instances, error) {
	ep, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	instancesMu.RLock()
	c, ok := instances[ep.Platform]
	names := make([]string, 0, len(instances))
	for n := range instances {
		names = append(names, n)
	}
	instancesMu.RUnlock()
	if !ok {
		slices.Sort(names)
		return nil, fmt.Errorf("platform %s: no client to run instances on it in this binary (platforms with one: %s)", ep.Platform, strings.Join(names, ", "))
	}
	return c(ep.Address)
}
