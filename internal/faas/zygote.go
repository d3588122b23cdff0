package faas

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ZygoteArgs is the command line of a zygote for handler listening on socket.
func (p Python) ZygoteArgs(handler, socket string) []string {
	return []string{p.Interpreter, "-m", "continuum_functions.zygote", handler, "--socket", socket}
}

// Zygote is a running zygote process started by StartZygote.
type Zygote struct {
	Socket string
	cmd    *exec.Cmd
	exited chan error
}

// StartZygote runs a zygote for handler on socket and waits until it accepts requests (it
// imports the handler first: seconds for pandas). Its output, and that of the instances and
// classic requests it forks (tracebacks included), goes to this process's stderr.
func StartZygote(ctx context.Context, py Python, handler, socket string) (*Zygote, error) {
	return StartZygoteLog(ctx, py, handler, socket, os.Stderr)
}

// StartZygoteLog is StartZygote with the zygote's output (the function's log) going to log.
func StartZygoteLog(ctx context.Context, py Python, handler, socket string, log io.Writer) (*Zygote, error) {
	_ = os.Remove(socket)
	args := py.ZygoteArgs(handler, socket)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), py.Env()...)
	cmd.Stdout, cmd.Stderr = log, log
	// The instances it forks hold a pipe to a log that is not a file: its end must not wait for theirs.
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start zygote: %w", err)
	}
	z := &Zygote{Socket: socket, cmd: cmd, exited: make(chan error, 1)}
	go func() { z.exited <- cmd.Wait() }()
	if err := WaitZygote(ctx, socket, z.exited); err != nil {
		z.Stop()
		return nil, err
	}
	return z, nil
}

// WaitZygote waits until the zygote on socket accepts connections; exited (optional) reports
// its end.
func WaitZygote(ctx context.Context, socket string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("zygote exited before listening on %s: %v", socket, err)
		case <-ctx.Done():
			return fmt.Errorf("zygote not listening on %s: %w", socket, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Stop kills the zygote (its instances live on until their watchdogs stop them).
func (z *Zygote) Stop() {
	_ = syscall.Kill(z.cmd.Process.Pid, syscall.SIGKILL) // its instances, in its group, stay
	<-z.exited
	_ = os.Remove(z.Socket)
}
