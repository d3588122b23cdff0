package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/deathsig"
)

// LocalRunner runs services as child processes on this host (every host is 127.0.0.1): for
// `continuum fl orchestrate --local` and tests. Isolation cannot happen.
type LocalRunner struct {
	LogDir string

	mu    sync.Mutex
	procs map[string]*localProc
}

type localProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	how  string
}

// Start runs s as a child process; every service is reached at 127.0.0.1.
func (r *LocalRunner) Start(_ context.Context, s Service) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.procs == nil {
		r.procs = map[string]*localProc{}
	}
	if p := r.procs[s.Name]; p != nil {
		select {
		case <-p.done:
		default:
			return "", fmt.Errorf("service %s is already running", s.Name)
		}
	}
	if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
		return "", err
	}
	stdout, err := os.Create(filepath.Join(r.LogDir, s.Name+".stdout.log"))
	if err != nil {
		return "", err
	}
	stderr, err := os.Create(filepath.Join(r.LogDir, s.Name+".stderr.log"))
	if err != nil {
		stdout.Close()
		return "", err
	}
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Out
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := deathsig.Start(cmd); err != nil {
		stdout.Close()
		stderr.Close()
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &localProc{cmd: cmd, done: make(chan struct{})}
	r.procs[s.Name] = p
	go func() {
		err := cmd.Wait()
		stdout.Close()
		stderr.Close()
		how := "exit 0"
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				how = "signal " + ws.Signal().String()
			} else {
				how = fmt.Sprintf("exit %d", ee.ExitCode())
			}
		}
		r.mu.Lock()
		p.how = how
		r.mu.Unlock()
		close(p.done)
	}()
	return "127.0.0.1", nil
}

// Stop sends SIGTERM to the service's process group, SIGKILL after 5 s, and forgets it.
func (r *LocalRunner) Stop(_ context.Context, name string) error {
	r.mu.Lock()
	p := r.procs[name]
	delete(r.procs, name)
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// Forget drops an exited service (one still running is kept: Stop ends it).
func (r *LocalRunner) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.procs[name]; p != nil {
		select {
		case <-p.done:
			delete(r.procs, name)
		default:
		}
	}
}

// Kill ends a service's process with SIGKILL as a crash would (tests), leaving it to Observe.
func (r *LocalRunner) Kill(name string) error {
	r.mu.Lock()
	p := r.procs[name]
	r.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no service %s", name)
	}
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

func (r *LocalRunner) Observe(context.Context) (Observation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	obs := Observation{Exited: map[string]string{}, Isolated: map[string]bool{}}
	for name, p := range r.procs {
		select {
		case <-p.done:
			obs.Exited[name] = p.how
		default:
		}
	}
	return obs, nil
}

// Apart is false: every service shares this host's files.
func (r *LocalRunner) Apart(string) bool { return false }

// StopAll stops every service still known (shutdown).
func (r *LocalRunner) StopAll() {
	r.mu.Lock()
	var names []string
	for n := range r.procs {
		names = append(names, n)
	}
	r.mu.Unlock()
	for _, n := range names {
		_ = r.Stop(context.Background(), n)
	}
}
