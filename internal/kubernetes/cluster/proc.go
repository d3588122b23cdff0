package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one of the cluster's daemons, run in a process group of its own so that stopping it
// also stops what it started (containerd's shims are the exception: they leave the group on
// purpose, and Down finds them by their command line).
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited and err is set
	err  error
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
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	pr := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		pr.err = cmd.Wait()
		close(pr.done)
	}()
	return pr, nil
}

// pid is the process's id (and its group's).
func (pr *proc) pid() int { return pr.cmd.Process.Pid }

// exited reports whether the process has exited, and how.
func (pr *proc) exited() (bool, error) {
	select {
	case <-pr.done:
		return true, pr.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, and SIGKILL after grace.
func (pr *proc) stop(grace time.Duration) {
	if ok, _ := pr.exited(); ok {
		return
	}
	_ = syscall.Kill(-pr.pid(), syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pr.pid(), syscall.SIGKILL)
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

// waitFor polls check until it returns nil, a process of procs exits, or timeout passes.
func waitFor(what string, timeout time.Duration, procs []*proc, check func() error) error {
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
		time.Sleep(200 * time.Millisecond)
	}
}

// errNotRunning is returned by Status and Down when the state directory holds no cluster.
var errNotRunning = errors.New("no cluster")
