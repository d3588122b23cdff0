package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/testbed"
)

// state is state.json in the state directory: what Down needs to undo Up when the supervisor
// that wrote it is gone.
type state struct {
	// PID is the supervisor's process (`continuum cluster up --foreground`).
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Config  Config    `json:"config"`
	// Sysctls are the values found before Up, put back by Down.
	Sysctls map[string]string `json:"sysctls"`
	// Chains are the iptables chains found before Up: Down deletes the ones that appeared since.
	Chains []string `json:"chains"`
	// Tables are the nftables tables found before Up: Down deletes the empty ones that appeared.
	Tables []string `json:"tables"`
	// Kubeconfig is the administrator's kubeconfig, once the control plane is up.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Ready is set once the Node is Ready and kube-proxy and DNS answer.
	Ready bool `json:"ready"`

	// Testbed is the testbed whose nodes a multi-node cluster's nodes live in; nil for the
	// one-node cluster in the host's namespaces.
	Testbed *testbedRef `json:"testbed,omitempty"`
	// Nodes are a multi-node cluster's Kubernetes nodes as planned (the one-node cluster's is
	// Config.hostNode).
	Nodes []nodeConfig `json:"nodes,omitempty"`
	// ControlPlane is the node a multi-node cluster's control plane runs in.
	ControlPlane string `json:"control_plane,omitempty"`
	// Created are the directories outside the state directory that were missing before Up and
	// that Up (or the testbed, or kubelet) would make: kubelet's device plugin directory and, of
	// a multi-node cluster, the levels of the nodes' cgroup roots in every hierarchy. The sweep
	// removes those that are empty then, deepest first.
	Created []string `json:"created,omitempty"`
	// APIForward is the host address (127.0.0.1:port) the supervisor forwards to the API server
	// of a multi-node cluster, in its node's namespace: the admin kubeconfig's server.
	APIForward string `json:"api_forward,omitempty"`
}

// testbedRef names a testbed where `continuum testbed` finds it.
type testbedRef struct {
	Name     string `json:"name"`
	StateDir string `json:"state_dir"`
}

// nodes are the cluster's Kubernetes nodes: the planned ones of a multi-node cluster, or the
// one-node cluster's node.
func (st *state) nodes() []nodeConfig {
	if st.Testbed != nil {
		return st.Nodes
	}
	return []nodeConfig{st.Config.hostNode()}
}

// cgroupTree is the cgroup (in every hierarchy) below which every process of the cluster's
// nodes and pods runs: the host cluster's root, or the testbed's cgroup.
func (st *state) cgroupTree() string {
	if st.Testbed != nil {
		return testbed.Cgroup(st.Testbed.Name)
	}
	return hostCgroupRoot
}

func writeState(p paths, st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := p.state() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p.state())
}

func readState(dir string) (*state, error) {
	b, err := os.ReadFile(paths{dir}.state())
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%w in %s", errNotRunning, dir)
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", paths{dir}.state(), err)
	}
	if err := st.check(dir); err != nil {
		return nil, fmt.Errorf("%s: %w; not acting on it (remove what it names by hand, then the file)", paths{dir}.state(), err)
	}
	return &st, nil
}

// check refuses a state that names anything Up in dir would not have made: the sweep kills,
// unmounts and removes what state.json names, so a file edited, copied from another state
// directory or corrupted must not point it at another testbed, another containerd or the
// whole cgroup tree.
func (st *state) check(dir string) error {
	if filepath.Clean(st.Config.StateDir) != filepath.Clean(dir) {
		return fmt.Errorf("written for state dir %q", st.Config.StateDir)
	}
	if st.Testbed == nil {
		if len(st.Nodes) > 0 {
			return errors.New("nodes without a testbed")
		}
		return nil
	}
	if want := testbedName(st.Config.StateDir); st.Testbed.Name != want {
		return fmt.Errorf("testbed %q, want %q (the state directory's)", st.Testbed.Name, want)
	}
	tree := testbed.Cgroup(st.Testbed.Name) + "/"
	for _, n := range st.Nodes {
		if !dnsLabel.MatchString(n.Name) {
			return fmt.Errorf("node name %q", n.Name)
		}
		if want := (paths{dir}).node(n.Name).root; filepath.Clean(n.Dir) != want {
			return fmt.Errorf("node %s: directory %q, want %q", n.Name, n.Dir, want)
		}
		if !strings.HasPrefix(strings.TrimPrefix(n.CgroupRoot, "/")+"/", tree) || strings.Contains(n.CgroupRoot, "..") {
			return fmt.Errorf("node %s: cgroup root %q is not under the testbed's %s", n.Name, n.CgroupRoot, tree)
		}
	}
	return nil
}

// alive reports whether the supervisor that wrote st still runs.
func (st *state) alive() bool {
	return st.PID > 0 && syscall.Kill(st.PID, 0) == nil && !isZombie(st.PID)
}
