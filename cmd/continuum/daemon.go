package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// spawnDaemon starts this binary with args as a detached daemon (its own session, so it survives
// the terminal closing) with its output in logPath, and polls ready with the daemon's pid until it
// says yes. It fails with the daemon's log when the daemon exits first, and after timeout, when
// it asks the daemon to stop (SIGTERM: it tears down what it made) and says what timed out.
// `testbed up` and `cluster up` use it; their --foreground mode is the daemon.
func spawnDaemon(what string, args []string, logPath string, timeout time.Duration, ready func(pid int) bool) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	d := exec.Command(exe, args...)
	d.Stdout, d.Stderr = logf, logf
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	deadline := time.After(timeout)
	for {
		if ready(d.Process.Pid) {
			return nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s daemon exited: %s", what, strings.TrimSpace(string(b)))
		case <-deadline:
			_ = d.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("%s daemon did not become ready in %s; asked it to stop (log: %s)", what, timeout, logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
