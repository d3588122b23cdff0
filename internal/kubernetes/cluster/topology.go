package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"

	"github.com/continuum-project/continuum/internal/testbed"
)

// clusterPlan is a multi-node cluster as decided before anything starts: the topology its
// testbed is made of, the testbed's name, the Kubernetes nodes (one per topology node, in the
// topology's order, each in its testbed node's namespace and cgroup) and the node the control
// plane runs in. Up records it in state.json before it creates anything, so that Down and the
// sweep know every name and path even if the supervisor dies at any later point.
type clusterPlan struct {
	topo         *testbed.Topology
	testbed      string
	nodes        []nodeConfig
	controlPlane string
}

// plan makes the plan of a multi-node cluster from the configuration: the topology (loaded from
// Topology or made for Nodes), the nodes' configuration and the control plane's node. Its errors
// name what is wrong: the topology file, the node, the label.
func (c Config) plan() (*clusterPlan, error) {
	topo, err := c.topology()
	if err != nil {
		return nil, err
	}
	addrs, _, err := topo.Addresses()
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", c.topologyName(), err)
	}
	name := testbedName(c.StateDir)
	specs := make([]nodeSpec, len(topo.Nodes))
	for i, n := range topo.Nodes {
		specs[i] = nodeSpec{Name: n.Name, Labels: n.Labels, Netns: testbed.NodeNetns(name, n.Name),
			Addr: addrs[n.Name], Cgroup: testbed.NodeCgroup(name, n.Name)}
	}
	cp, err := controlPlaneNode(specs, c.ControlPlane)
	if err != nil {
		return nil, err
	}
	nodes, err := c.nodeConfigs(specs)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", c.topologyName(), err)
	}
	return &clusterPlan{topo: topo, testbed: name, nodes: nodes, controlPlane: cp}, nil
}

// maxNodes bounds --nodes: its full mesh has N(N-1)/2 links (the fabric carries each, idle or
// not), and every node runs four daemons on this one host (11 nodes: 0.32 cores idle, 2.4 GiB).
const maxNodes = 32

// topology is the testbed's topology: the file Topology names, or Nodes nodes n1..nN in a full
// mesh of links without delay.
func (c Config) topology() (*testbed.Topology, error) {
	if c.Topology != "" {
		t, err := testbed.LoadTopology(c.Topology)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("topology %s: no such file (want a topology file: nodes, links; see docs/testbed.md)", c.Topology)
		}
		if err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
		return t, nil
	}
	if c.Nodes < 1 || c.Nodes > maxNodes {
		return nil, fmt.Errorf("nodes %d: want 1 to %d (a topology file for more)", c.Nodes, maxNodes)
	}
	t := &testbed.Topology{}
	for i := range c.Nodes {
		t.Nodes = append(t.Nodes, testbed.Node{Name: fmt.Sprintf("n%d", i+1)})
		for j := range i {
			t.Links = append(t.Links, testbed.Link{Between: []string{t.Nodes[j].Name, t.Nodes[i].Name}})
		}
	}
	t.ApplyDefaults()
	if err := t.Validate(c.topologyName(), nil); err != nil {
		return nil, err
	}
	return t, nil
}

// topologyName names the topology in errors: its file, or what made it.
func (c Config) topologyName() string {
	if c.Topology != "" {
		return c.Topology
	}
	return fmt.Sprintf("of %d nodes", c.Nodes)
}

// testbedName is the name of the testbed of the cluster whose state directory is stateDir:
// "k8s-" and a hash of the directory, so that two clusters (two state directories) get two
// testbeds, and the same directory always the same one.
func testbedName(stateDir string) string {
	h := sha256.Sum256([]byte(stateDir))
	return "k8s-" + hex.EncodeToString(h[:4])
}
