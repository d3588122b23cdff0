package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/deathsig"
)

// process is one running component. Its stdout and stderr are appended to logPath.
type process struct {
	name    string
	args    []string
	logPath string

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and waitErr is set
	waitErr error
}

// start launches args[0] with args[1:] in its own process group (so that Stop reaches anything
// it forks, and a terminal's Ctrl-C is ours to forward) and with SIGKILL as its parent-death
// signal, so that a crashed test binary does not leave an apiserver holding its port.
func startProcess(name, logPath string, args []string) (*process, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	fmt.Fprintf(lf, "### %s\n", strings.Join(args, " "))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := deathsig.Start(cmd); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, args[0], err)
	}
	p := &process{name: name, args: args, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stopGrace is how long stop waits after SIGTERM before killing the group. The components
// keep no state of their own (it is all in the store), so a short grace only spares their
// logs an abrupt end.
const stopGrace = 3 * time.Second

// stop sends SIGTERM to the process group, then SIGKILL after stopGrace, and returns once the
// process has exited. Safe to call more than once.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
	}
}

// kill sends SIGKILL to the process group and waits for the exit.
func (p *process) kill() {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// logTail returns the last n lines of the process's log, for error messages.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
