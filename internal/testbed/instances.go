package testbed

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

func init() {
	platform.RegisterInstances(PlatformName, func(address string) (platform.Instances, error) {
		name, dir, err := ParseEndpointAddress(address)
		if err != nil {
			return nil, err
		}
		return &Instances{Client: NewClient(dir, name)}, nil
	})
}

// Instances is the testbed's component-side client (platform.Instances): instances are
// processes of the testbed, each in a cgroup of its own on its node (so the testbed samples
// its CPU and memory as any component's) and its traffic to other nodes crosses the emulated
// links. A node's name is its host name in every node.
type Instances struct{ Client *Client }

// Start starts s as a process of the testbed; a process of the same name (one that exited
// stays known until stopped) is stopped first. The host it returns is its node's name.
func (in *Instances) Start(_ context.Context, s platform.InstanceSpec) (string, error) {
	switch {
	case s.Node == "":
		return "", fmt.Errorf("instance %s: no node", s.Name)
	case s.Stdout != nil, s.Image != nil, s.ExecIn != nil:
		return "", fmt.Errorf("instance %s: the testbed's client starts processes of a command line only (no Stdout, Image or ExecIn)", s.Name)
	}
	// Most names are new (a gateway's instances), so the stop is asked for only when the
	// name is taken: a function's cold start pays one round trip, not two.
	_, err := in.Client.Start(procSpec(s))
	if err != nil && strings.Contains(err.Error(), "already exists") {
		if err := in.stop(s.Name, 5*time.Second); err != nil {
			return "", fmt.Errorf("start %s on %s: stopping the instance of that name first: %w", s.Name, s.Node, err)
		}
		_, err = in.Client.Start(procSpec(s))
	}
	if err != nil {
		return "", fmt.Errorf("start %s on %s: %w", s.Name, s.Node, err)
	}
	return s.Node, nil
}

// Stop stops the process (SIGTERM, SIGKILL after grace) and forgets it.
func (in *Instances) Stop(_ context.Context, name string, grace time.Duration) error {
	return in.stop(name, grace)
}

func (in *Instances) stop(name string, grace time.Duration) error {
	err := in.Client.StopWithin(name, grace)
	if err != nil && strings.Contains(err.Error(), "no process") {
		return nil
	}
	return err
}

// State lists the testbed's processes and nodes; a node cut off from every other by a
// partition is Isolated.
func (in *Instances) State(context.Context) (platform.State, error) {
	st, err := in.Client.Status()
	if err != nil {
		return platform.State{}, err
	}
	isolated := map[string]bool{}
	for _, part := range st.Partitions {
		// The testbed describes a node cut off from everyone as "node <name>".
		if n, ok := strings.CutPrefix(part, "node "); ok {
			isolated[n] = true
		}
	}
	var out platform.State
	for _, n := range st.Nodes {
		out.Nodes = append(out.Nodes, platform.NodeState{Name: n.Name, Labels: n.Labels, Isolated: isolated[n.Name]})
	}
	for _, p := range st.Procs {
		is := platform.InstanceState{Name: p.Name, Node: p.Node, Running: p.State == "running", CPUSeconds: p.CPUSeconds}
		if !is.Running {
			is.Ended = fmt.Sprintf("exit %d", p.ExitCode)
			if p.Signal != "" {
				is.Ended = "signal " + p.Signal
			}
		}
		out.Instances = append(out.Instances, is)
	}
	return out, nil
}

// Addr is node:port: node names resolve to their addresses in every node.
func (in *Instances) Addr(node string, port int) string { return fmt.Sprintf("%s:%d", node, port) }

// SharesNode is true: every process of a node is in the node's network namespace.
func (in *Instances) SharesNode(string) bool { return true }
