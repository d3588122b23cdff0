package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
)

// writeTopology writes a topology file for a test and returns its path.
func writeTopology(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanMultiNode: --nodes N makes n1..nN in a full mesh of links without delay; a topology
// file gives its nodes, labels and links. Each Kubernetes node lives in its testbed node's
// namespace and cgroup (the testbed's own names for them), at its address, with its /24 and the
// topology's labels; the control plane goes where controlPlaneNode says.
func TestPlanMultiNode(t *testing.T) {
	cfg := hostConfig()
	cfg.Nodes = 3
	pl, err := cfg.plan()
	if err != nil {
		t.Fatal(err)
	}
	if pl.testbed != testbedName(cfg.StateDir) || testbed.ValidName(pl.testbed) != nil || !strings.HasPrefix(pl.testbed, "k8s-") {
		t.Errorf("testbed name %q", pl.testbed)
	}
	if got := strings.Join(pl.topo.NodeNames(), ","); got != "n1,n2,n3" || len(pl.topo.Links) != 3 {
		t.Errorf("nodes %s, %d links; want n1,n2,n3 in a full mesh (3 links)", got, len(pl.topo.Links))
	}
	for _, l := range pl.topo.Links {
		if l.Delay.Duration != 0 || l.Loss != 0 || l.Bandwidth != 0 {
			t.Errorf("link %v: %+v, want no delay, loss or limit", l.Between, l.LinkProps)
		}
	}
	if pl.controlPlane != "n1" {
		t.Errorf("control plane on %s, want n1 (the first)", pl.controlPlane)
	}
	for i, n := range pl.nodes {
		if n.Netns != testbed.NodeNetns(pl.testbed, n.Name) || n.CgroupRoot != "/"+testbed.NodeCgroup(pl.testbed, n.Name)+"/pods" {
			t.Errorf("node %s: namespace %s, cgroup root %s", n.Name, n.Netns, n.CgroupRoot)
		}
		if want := []string{"10.77.0.1", "10.77.0.2", "10.77.0.3"}[i]; n.IP.String() != want {
			t.Errorf("node %s: address %s, want %s (the testbed's)", n.Name, n.IP, want)
		}
		if len(n.Labels) != 1 || n.Labels[nodeLabel] != n.Name {
			t.Errorf("node %s: labels %v", n.Name, n.Labels)
		}
	}
	// Another state directory, another testbed; the same one, the same.
	other := cfg
	other.StateDir = "/var/lib/continuum/other"
	if testbedName(other.StateDir) == pl.testbed || testbedName(cfg.StateDir) != pl.testbed {
		t.Errorf("testbed names: %s for %s, %s for %s", pl.testbed, cfg.StateDir, testbedName(other.StateDir), other.StateDir)
	}

	cfg.Nodes = 0
	cfg.Topology = writeTopology(t, `
network: 10.50.0.0/24
nodes:
  - {name: device, labels: {tier: device}}
  - {name: edge, labels: {tier: edge, region: eu}}
  - {name: dc, labels: {tier: cloud}}
links:
  - {between: [device, edge], delay: 5ms}
  - {between: [edge, dc], delay: 20ms}
`)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err = cfg.plan()
	if err != nil {
		t.Fatal(err)
	}
	if pl.controlPlane != "dc" {
		t.Errorf("control plane on %s, want dc (tier=cloud)", pl.controlPlane)
	}
	edge := pl.nodes[1]
	if edge.Name != "edge" || edge.IP.String() != "10.50.0.2" || edge.PodCIDR.String() != "10.244.1.0/24" ||
		edge.Labels["region"] != "eu" || edge.Labels["tier"] != "edge" || edge.Labels[nodeLabel] != "edge" {
		t.Errorf("node edge: %+v", edge)
	}
	cfg.ControlPlane = "edge"
	if pl, err = cfg.plan(); err != nil || pl.controlPlane != "edge" {
		t.Errorf("--control-plane edge: %v, %v", pl, err)
	}
}

// TestMultiNodeConfigRefused: what cannot make a multi-node cluster is refused before anything
// starts, with what is wrong and what would do.
func TestMultiNodeConfigRefused(t *testing.T) {
	scenario := writeTopology(t, "name: s\ntopology_file: t.yaml\ncomponents: []\n")
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   []string
	}{
		{"unknown topology file", func(c *Config) { c.Topology = "/nonexistent/topo.yaml" },
			[]string{"topology /nonexistent/topo.yaml", "no such file"}},
		{"a scenario as topology", func(c *Config) { c.Topology = scenario }, []string{"is a scenario", "topology_file"}},
		{"bad topology", func(c *Config) { c.Topology = writeTopology(t, "nodes: [{name: Edge}]\n") },
			[]string{`invalid node name "Edge"`}},
		{"topology and nodes", func(c *Config) { c.Topology, c.Nodes = "/t.yaml", 2 }, []string{"give one of them"}},
		{"negative nodes", func(c *Config) { c.Nodes = -1 }, []string{"nodes -1", "at least 1"}},
		{"too many nodes", func(c *Config) { c.Nodes = 100000 }, []string{"nodes 100000", "want 1 to 32"}},
		{"unknown control plane", func(c *Config) { c.Nodes, c.ControlPlane = 2, "cloud" },
			[]string{`control plane node "cloud": no such node (the nodes are n1, n2)`}},
		{"control plane of one node", func(c *Config) { c.ControlPlane = "cloud" },
			[]string{`control plane node "cloud"`, "a topology or a node count"}},
		{"more nodes than /24s", func(c *Config) { c.Nodes, c.PodCIDR = 5, "10.244.0.0/22" },
			[]string{"of 5 nodes", "holds 4 /24s", "too small for 5 nodes"}},
		{"bad label", func(c *Config) {
			c.Topology = writeTopology(t, "nodes: [{name: a, labels: {tier: cloud}}, {name: b, labels: {zone: 'x y'}}]\n")
		}, []string{"node b", `label zone="x y"`}},
		{"grace period too short", func(c *Config) { c.NodeGracePeriod = 2 * time.Second },
			[]string{"node grace period 2s", "from 5s to 1h0m0s", "0 for Kubernetes' default"}},
		{"grace period too long", func(c *Config) { c.NodeGracePeriod = 700000 * time.Hour },
			[]string{"node grace period 700000h0m0s", "from 5s to 1h0m0s"}},
		{"grace period not whole seconds", func(c *Config) { c.NodeGracePeriod = 7500 * time.Millisecond },
			[]string{"node grace period 7.5s", "whole number of seconds"}},
		{"negative eviction timeout", func(c *Config) { c.EvictionTimeout = -time.Second },
			[]string{"eviction timeout -1s", "from 1s to 24h0m0s"}},
		{"node address in the pod CIDR", func(c *Config) {
			c.Topology = writeTopology(t, "network: 10.244.200.0/24\nnodes: [{name: a}]\n")
		}, []string{"node a", "10.244.200.1", "pod CIDR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hostConfig()
			tc.change(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("no error, want one with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMultiNodeState: state.json keeps what the sweep needs after the supervisor is gone: the
// testbed, the nodes with their paths and cgroup roots, the cgroup levels made; the one-node
// cluster's state has none of it and sweeps its one node as before.
func TestMultiNodeState(t *testing.T) {
	cfg := hostConfig()
	cfg.Nodes = 2
	dir := t.TempDir()
	cfg.StateDir = dir
	pl, err := cfg.plan()
	if err != nil {
		t.Fatal(err)
	}
	st := &state{PID: 1, Config: cfg, Testbed: &testbedRef{Name: pl.testbed, StateDir: "/run/continuum"},
		Nodes: pl.nodes, ControlPlane: pl.controlPlane, Created: []string{"/sys/fs/cgroup/cpuset/continuum"}}
	if err := writeState(paths{dir}, st); err != nil {
		t.Fatal(err)
	}
	back, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(st)
	b2, _ := json.Marshal(back)
	if string(b1) != string(b2) {
		t.Errorf("state round trip:\n got %s\nwant %s", b2, b1)
	}
	if ns := back.nodes(); len(ns) != 2 || ns[1].Name != "n2" || ns[1].paths().containerdSock() != pl.nodes[1].paths().containerdSock() {
		t.Errorf("nodes %+v", ns)
	}
	if back.cgroupTree() != testbed.Cgroup(pl.testbed) {
		t.Errorf("cgroup tree %s", back.cgroupTree())
	}
	host := &state{Config: hostConfig()}
	if ns := host.nodes(); len(ns) != 1 || ns[0].Dir != host.Config.StateDir || ns[0].Bridge != "continuum0" || host.cgroupTree() != hostCgroupRoot {
		t.Errorf("one-node cluster: nodes %+v, cgroup tree %s", ns, host.cgroupTree())
	}
}

// TestStateNamingWhatUpDidNotMakeRefused: the sweep acts on what state.json names, so a file
// pointing it at another testbed, another directory or the whole cgroup tree is refused.
func TestStateNamingWhatUpDidNotMakeRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := hostConfig()
	cfg.Nodes, cfg.StateDir = 2, dir
	pl, err := cfg.plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*state)
		want   string
	}{
		{"another state dir", func(st *state) { st.Config.StateDir = "/var/lib/continuum/other" }, "written for state dir"},
		{"testbed ..", func(st *state) { st.Testbed.Name = ".." }, `testbed ".."`},
		{"testbed empty", func(st *state) { st.Testbed.Name = "" }, `testbed ""`},
		{"another testbed", func(st *state) { st.Testbed.Name = "lab" }, `testbed "lab"`},
		{"node dir elsewhere", func(st *state) { st.Nodes[1].Dir = "/run/containerd/.." }, "node n2: directory"},
		{"node name", func(st *state) { st.Nodes[0].Name = "../x" }, `node name "../x"`},
		{"cgroup root outside", func(st *state) { st.Nodes[0].CgroupRoot = "/" }, "node n1: cgroup root"},
		{"cgroup root climbing", func(st *state) {
			st.Nodes[0].CgroupRoot = "/" + testbed.Cgroup(pl.testbed) + "/../../x"
		}, "node n1: cgroup root"},
		{"nodes without testbed", func(st *state) { st.Testbed = nil }, "nodes without a testbed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &state{PID: 1, Config: cfg, Testbed: &testbedRef{Name: pl.testbed}, Nodes: slices.Clone(pl.nodes)}
			if _, err := readStateAfter(t, dir, st); err != nil {
				t.Fatalf("the untouched state was refused: %v", err)
			}
			tc.change(st)
			_, err := readStateAfter(t, dir, st)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readState: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// readStateAfter writes st to dir's state.json and reads it back.
func readStateAfter(t *testing.T, dir string, st *state) (*state, error) {
	t.Helper()
	if err := writeState(paths{dir}, st); err != nil {
		t.Fatal(err)
	}
	return readState(dir)
}

// TestRemoveCreated: the directories Up made are removed when empty, deepest first; one that
// holds something now (another testbed's cgroup) stays, and one already gone is no error.
func TestRemoveCreated(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "continuum")
	ours := filepath.Join(a, "k8s-1", "n1", "pods")
	other := filepath.Join(root, "shared")
	for _, d := range []string{ours, filepath.Join(other, "someone-else")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	created := []string{a, filepath.Join(a, "k8s-1"), filepath.Join(a, "k8s-1", "n1"), ours, other, filepath.Join(root, "gone")}
	if err := removeCreated(created); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", a, err)
	}
	if _, err := os.Stat(filepath.Join(other, "someone-else")); err != nil {
		t.Errorf("another's directory removed: %v", err)
	}
	if err := syscall.Rmdir(filepath.Join(other, "someone-else")); err != nil {
		t.Fatal(err)
	}
}

// TestStateDirLockedOnce: a second Up on a state directory whose lock is held is refused,
// naming the directory; the lock is free again once its holder lets go.
func TestStateDirLockedOnce(t *testing.T) {
	dir := t.TempDir()
	first, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := lockStateDir(dir); err == nil {
		second.Close()
		t.Fatal("a second lock of one state directory was granted")
	} else if !strings.Contains(err.Error(), "another `continuum cluster up`") || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not say who holds %s", err, dir)
	}
	first.Close()
	again, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("after the holder closed it: %v", err)
	}
	again.Close()
}

// TestStateDirOnlyRoots: a state directory another user owns or may write, or a symbolic link,
// is refused, naming what is wrong; root's own is taken.
func TestStateDirOnlyRoots(t *testing.T) {
	requireRoot(t)
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, uid int) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, 0); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := checkStateDir(mk("ok", 0o755, 0)); err != nil {
		t.Errorf("root's 0755 directory: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o755, 0), link); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		mk("theirs", 0o755, 1000):   "belongs to uid 1000",
		mk("writable", 0o777, 0):    "writable by others than its owner (-rwxrwxrwx)",
		mk("group-write", 0o775, 0): "writable by others",
		link:                        "not a directory (a symbolic link?)",
	} {
		if err := checkStateDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", dir, err, want)
		}
	}
}
