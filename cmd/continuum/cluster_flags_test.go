package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterUpRefuses: `cluster up` refuses flags that mean nothing together, a node count
// below one, an unknown topology file and an unknown control-plane node, saying what is wrong,
// before it starts anything.
func TestClusterUpRefuses(t *testing.T) {
	topo := filepath.Join(t.TempDir(), "topo.yaml")
	if err := os.WriteFile(topo, []byte("nodes: [{name: edge}, {name: cloud}]\nlinks: [{between: [edge, cloud], delay: 5ms}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	valid := []string{"--bin-dir", "/nonexistent/bin", "--sandbox-image", "continuum.local/continuum-pause:test"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "0"}, "--nodes 0: want at least 1"},
		{[]string{"--nodes", "-2"}, "--nodes -2: want at least 1"},
		{[]string{"--nodes", "2", "--topology", topo}, "--topology and --nodes: give one of them"},
		{[]string{"--control-plane", "cloud"}, "--control-plane: only a cluster of --topology or --nodes"},
		{[]string{"--nodes", "2", "--node-name", "x"}, "--node-name is the one-node cluster's"},
		{[]string{"--topology", topo, "--bridge", "br0"}, "--bridge is the one-node cluster's"},
		{append([]string{"--topology", "/nonexistent/topo.yaml"}, valid...), "topology /nonexistent/topo.yaml: no such file"},
		{append([]string{"--topology", topo, "--control-plane", "fog"}, valid...), `control plane node "fog": no such node (the nodes are edge, cloud)`},
		{append([]string{"--nodes", "2", "--control-plane", "cloud"}, valid...), `control plane node "cloud": no such node (the nodes are n1, n2)`},
	} {
		c := newClusterCmd()
		c.SetArgs(append([]string{"up", "--state-dir", t.TempDir()}, tc.args...))
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		err := c.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cluster up %s: %v, want an error with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
