package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ExecCommand prepares argv to run inside node of the testbed recorded in stateDir, in the node's
// namespace, hostname and cgroup (so it counts against the node's limits). It needs no access to
// the process hosting the testbed. The caller wires stdio and runs it.
func ExecCommand(stateDir, name, nodeName string, argv []string) (*exec.Cmd, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	st, err := readState(filepath.Join(stateDir, name))
	if err != nil {
		return nil, fmt.Errorf("no testbed %q (state dir %s): %w", name, stateDir, err)
	}
	ns := NodeNetns(name, nodeName)
	if !slices.Contains(st.Netns, ns) {
		var nodes []string
		for _, n := range st.Netns {
			nodes = append(nodes, strings.TrimPrefix(n, NodeNetns(name, "")))
		}
		return nil, fmt.Errorf("testbed %q has no node %q (nodes: %s)", name, nodeName, strings.Join(nodes, ", "))
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command given: use `continuum testbed exec --name %s %s -- CMD...`", name, nodeName)
	}
	cg, err := detectCgroups()
	if err != nil {
		return nil, err
	}
	// Shell-like commands share one "exec" cgroup per node; it must exist before the launcher joins.
	cgPath := st.CgroupPath + "/" + nodeName + "/exec"
	if err := cg.create(cgPath); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return launcherCmd(exe, ns, nodeName, cgPath, false, argv), nil
}
