package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// launcherArg is argv[1] of a continuum process re-executed to enter a node: it joins the node's
// cgroup and hostname before anything else runs, then hands over to `ip netns exec`, which enters
// the network namespace and bind-mounts the node's /etc/hosts. Joining the cgroup first means
// every process the command forks is accounted and limited from its first instruction.
//
// In host-mounts mode it enters only the network namespace, itself (setns), and keeps the host's
// mount namespace: `ip netns exec` gives each process a mount namespace of its own with a fresh
// sysfs over /sys, which hides the cgroup filesystem and keeps one process's mounts from the
// next. Daemons that manage cgroups and share mounts (kubelet, containerd and its shims) need
// the host's; they do without the node's /etc/hosts.
const launcherArg = "__continuum-enter-node"

// Launcher modes (argv[5]).
const (
	modeNetnsExec  = "netns-exec"
	modeHostMounts = "host-mounts"
)

// IsLauncher reports whether this process was started as a node launcher; main (and TestMain in
// packages that start nodes) must call LauncherMain before anything else when it is.
func IsLauncher() bool { return len(os.Args) > 1 && os.Args[1] == launcherArg }

// LauncherMain joins the cgroup and execs the command; it returns only on failure, exiting 127.
// argv: __continuum-enter-node <netns> <hostname> <cgroup-path> <mode> -- cmd args...
func LauncherMain() {
	err := launch(os.Args[2:])
	fmt.Fprintf(os.Stderr, "continuum: enter node: %v\n", err)
	os.Exit(127)
}

func launch(args []string) error {
	if len(args) < 6 || args[4] != "--" || (args[3] != modeNetnsExec && args[3] != modeHostMounts) {
		return fmt.Errorf("usage: %s <netns> <hostname> <cgroup> %s|%s -- cmd...", launcherArg, modeNetnsExec, modeHostMounts)
	}
	ns, host, cgPath, mode, cmd := args[0], args[1], args[2], args[3], args[5:]
	cg, err := detectCgroups()
	if err != nil {
		return err
	}
	if err := cg.join(cgPath, os.Getpid()); err != nil {
		return err
	}
	// Namespaces are the calling thread's until exec: this thread unshares, names the node and
	// execs. A UTS namespace of its own, whatever the parent did, so that the hostname set is
	// never the host's (a command line from WrapArgv is started without CLONE_NEWUTS).
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("new UTS namespace: %w", err)
	}
	if err := unix.Sethostname([]byte(host)); err != nil {
		return fmt.Errorf("sethostname %s: %w", host, err)
	}
	if mode == modeHostMounts {
		return execInNetns(ns, cmd)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("iproute2 'ip' not found (run make demo or scripts/setup.sh: the core setup installs it): %w", err)
	}
	argv := append([]string{"ip", "netns", "exec", ns}, cmd...)
	return syscall.Exec(ip, argv, os.Environ())
}

// execInNetns enters network namespace ns (by its /run/netns name) and execs cmd. setns
// changes only the calling thread, which the caller (launch) has locked to this goroutine and
// which execs: the new program starts single-threaded in the namespace.
func execInNetns(ns string, cmd []string) error {
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		return err
	}
	fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", ns, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", ns, err)
	}
	unix.Close(fd)
	return syscall.Exec(path, cmd, os.Environ())
}

// WrapArgv returns the command line that runs argv in node as Start's processes run (its
// network namespace, hostname and a cgroup of the node's named name), for a supervisor of its
// own (the Kubernetes control plane's): the process is not a Proc, but it counts against the
// node's limits and node faults (kill, pause) reach it. hostMounts as ProcSpec.HostMounts.
//
// The name is the testbed's for good, as a Proc's: no Start may take it (its cgroup, and so
// its signals and limits, would be shared). Calling WrapArgv again with the same node and name
// (a restart by the caller's supervisor) returns the same command line.
func (tb *Testbed) WrapArgv(node, name string, hostMounts bool, argv []string) ([]string, error) {
	n, err := tb.node(node)
	if err != nil {
		return nil, err
	}
	if !procNameRE.MatchString(name) || name == "exec" {
		return nil, fmt.Errorf("invalid process name %q: use letters, digits, '.', '_' and '-' (and not \"exec\")", name)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("process %s: no command", name)
	}
	tb.mu.Lock()
	prev, wrapped := tb.wrapped[name]
	_, taken := tb.procs[name]
	switch {
	case tb.down:
		tb.mu.Unlock()
		return nil, errors.New("testbed is shutting down")
	case wrapped && prev != node:
		tb.mu.Unlock()
		return nil, fmt.Errorf("process %q already runs on node %s", name, prev)
	case taken && !wrapped:
		tb.mu.Unlock()
		return nil, fmt.Errorf("process %q already exists", name)
	}
	tb.procs[name] = nil // reserved: Start refuses the name; Down and status skip nil entries
	if tb.wrapped == nil {
		tb.wrapped = map[string]string{}
	}
	tb.wrapped[name] = node
	tb.mu.Unlock()
	cg := n.cgroup + "/" + name
	if err := tb.cg.create(cg); err != nil {
		return nil, err
	}
	mode := modeNetnsExec
	if hostMounts {
		mode = modeHostMounts
	}
	return append([]string{tb.launcher, launcherArg, n.ns, n.name, cg, mode, "--"}, argv...), nil
}

// Reserve keeps name from every process Start or WrapArgv would start, on any node: for a
// cgroup <node>/<name> that the caller makes and uses itself (a Kubernetes node's kubelet puts
// its pods in <node>/pods), which a process of that name would share.
func (tb *Testbed) Reserve(name string) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.down {
		return errors.New("testbed is shutting down")
	}
	if _, taken := tb.procs[name]; taken {
		return fmt.Errorf("process %q already exists", name)
	}
	tb.procs[name] = nil // as WrapArgv's names: Start refuses it; Down and status skip it
	return nil
}

// launcherCmd builds the exec.Cmd that runs argv in namespace ns with hostname host under cgroup
// cgPath, via the launcher binary. The fresh UTS namespace makes the hostname the node's alone.
func launcherCmd(launcher, ns, host, cgPath string, hostMounts bool, argv []string) *exec.Cmd {
	mode := modeNetnsExec
	if hostMounts {
		mode = modeHostMounts
	}
	args := append([]string{launcherArg, ns, host, cgPath, mode, "--"}, argv...)
	c := exec.Command(launcher, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS}
	return c
}
