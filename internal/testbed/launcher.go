package testbed

import (
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
	// The parent started us in a fresh UTS namespace (CLONE_NEWUTS), so this names only the node.
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
// changes only the calling thread, which stays locked to this goroutine and is the one that
// execs: the new program starts single-threaded in the namespace.
func execInNetns(ns string, cmd []string) error {
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		return err
	}
	fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", ns, err)
	}
	runtime.LockOSThread()
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", ns, err)
	}
	unix.Close(fd)
	return syscall.Exec(path, cmd, os.Environ())
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
