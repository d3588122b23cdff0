package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/deathsig"
	"github.com/continuum-project/continuum/internal/testbed"
)

// proc is one of the cluster's daemons: a host process in a process group of its own, so that
// stopping it also stops what it started (containerd's shims are the exception: they leave the
// group on purpose, and Down finds them by their command line); or, in a multi-node cluster, a
// testbed process in its node (its namespace, and a cgroup of its own below the node's, which
// stopping it empties).
type proc struct {
	name string
	role string // the daemon: containerd, kubelet, ...
	node string // a multi-node cluster's node it runs in
	cmd  *exec.Cmd
	tp   *testbed.Proc
	log  string
	done <-chan struct{} // a host process's: closed when it has exited (and err is set)
	err  error
}

// exitedC is closed when the process's current run has exited: a testbed process's channel is
// a new one after each restart (restartNode).
func (pr *proc) exitedC() <-chan struct{} {
	if pr.tp != nil {
		return pr.tp.Done()
	}
	return pr.done
}

// startProc starts argv with its output in logs/<name>.log.
func startProc(p paths, name string, argv []string, env []string) (*proc, error) {
	if err := os.MkdirAll(p.logs(), 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(p.logs(), name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := deathsig.Start(cmd); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	done := make(chan struct{})
	pr := &proc{name: name, role: name, cmd: cmd, log: logPath, done: done}
	go func() {
		pr.err = cmd.Wait()
		close(done)
	}()
	return pr, nil
}

// startNodeProc starts argv in testbed node n as the process <node>.<role>, with its output in
// logs/<node>.<node>.<role>.{stdout,stderr}.log. hostMounts as testbed.ProcSpec's: for the
// daemons that share mounts and manage cgroups (containerd, kubelet).
func startNodeProc(tb *testbed.Testbed, p paths, n nodeConfig, role string, argv, env []string, hostMounts bool) (*proc, error) {
	name := n.Name + "." + role
	tp, err := tb.Start(testbed.ProcSpec{Name: name, Node: n.Name, Args: argv, Env: env, LogDir: p.logs(), HostMounts: hostMounts})
	if err != nil {
		return nil, fmt.Errorf("start %s on node %s: %w", role, n.Name, err)
	}
	return &proc{name: name, role: role, node: n.Name, tp: tp, log: testbed.LogPath(p.logs(), n.Name, name, "stderr")}, nil
}

// exited reports whether the process has exited, and how.
func (pr *proc) exited() (bool, error) {
	select {
	case <-pr.exitedC():
	default:
		return false, nil
	}
	if pr.tp != nil {
		switch e := pr.tp.Exit(); {
		case e.Signal != "":
			return true, fmt.Errorf("signal: %s", e.Signal)
		case e.Code != 0:
			return true, fmt.Errorf("exit status %d", e.Code)
		}
		return true, nil
	}
	return true, pr.err
}

// stop asks the process to exit (SIGTERM), and kills it (SIGKILL) after grace.
func (pr *proc) stop(grace time.Duration) {
	if ok, _ := pr.exited(); ok {
		return
	}
	if pr.tp != nil {
		_ = pr.tp.Stop(grace)
		return
	}
	pid := pr.cmd.Process.Pid // and its group's
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-pr.done
	}
}

// failure describes an exited process with the end of its log.
func (pr *proc) failure() error {
	_, err := pr.exited()
	return fmt.Errorf("%s exited (%v); the end of %s:\n%s", pr.name, err, pr.log, logTail(pr.log, 15))
}

// logTail returns the last n lines of a log file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls check until it returns nil, a process of procs exits, timeout passes or ctx
// ends.
func waitFor(ctx context.Context, what string, timeout time.Duration, procs []*proc, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		for _, pr := range procs {
			if ok, _ := pr.exited(); ok {
				return fmt.Errorf("waiting for %s: %w", what, pr.failure())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w", what, timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// errNotRunning is returned by Status and Down when the state directory holds no cluster.
var errNotRunning = errors.New("no cluster")
