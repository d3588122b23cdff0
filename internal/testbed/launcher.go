package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// launcherArg is argv[1] of a continuum process re-executed to enter a node: it joins the node's
// cgroup and hostname before anything else runs, then hands over to `ip netns exec`, which enters
// the network namespace and bind-mounts the node's /etc/hosts. Joining the cgroup first means
// every process the command forks is accounted and limited from its first instruction.
const launcherArg = "__continuum-enter-node"

// IsLauncher reports whether this process was started as a node launcher; main (and TestMain in
// packages that start nodes) must call LauncherMain before anything else when it is.
func IsLauncher() bool { return len(os.Args) > 1 && os.Args[1] == launcherArg }

// LauncherMain joins the cgroup and execs the command; it returns only on failure, exiting 127.
// argv: __continuum-enter-node <netns> <hostname> <cgroup-path> -- cmd args...
func LauncherMain() {
	err := launch(os.Args[2:])
	fmt.Fprintf(os.Stderr, "continuum: enter node: %v\n", err)
	os.Exit(127)
}

func launch(args []string) error {
	if len(args) < 5 || args[3] != "--" {
		return fmt.Errorf("usage: %s <netns> <hostname> <cgroup> -- cmd...", launcherArg)
	}
	ns, host, cgPath, cmd := args[0], args[1], args[2], args[4:]
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
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("iproute2 'ip' not found (run make demo or scripts/setup.sh: the core setup installs it): %w", err)
	}
	argv := append([]string{"ip", "netns", "exec", ns}, cmd...)
	return syscall.Exec(ip, argv, os.Environ())
}

// launcherCmd builds the exec.Cmd that runs argv in namespace ns with hostname host under cgroup
// cgPath, via the launcher binary. The fresh UTS namespace makes the hostname the node's alone.
func launcherCmd(launcher, ns, host, cgPath string, argv []string) *exec.Cmd {
	args := append([]string{launcherArg, ns, host, cgPath, "--"}, argv...)
	c := exec.Command(launcher, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS}
	return c
}
