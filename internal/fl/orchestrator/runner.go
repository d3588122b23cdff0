package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/deathsig"
	"github.com/continuum-project/continuum/internal/platform"
)

// Service is one FL service process: a global or local aggregator, or a client.
type Service struct {
	Name string   // unique: "fl-ga-n1", "fl-la-n2", "fl-cl-n4"
	Node string   // the FL node it serves as
	Host string   // where it runs (a testbed node; "" for a local runner)
	Args []string // the full command line
	Env  []string
	Out  string // its output directory (fl.jsonl)
	// Clients are the clients a group process runs (Node is empty then); Signature tells
	// whether two group services run the same clients against the same servers.
	Clients   []string
	Signature string
}

// Observation is what a Runner sees of the services it started and of the nodes.
type Observation struct {
	// Exited maps a service that is no longer running to how it ended ("exit 1", "signal killed").
	Exited map[string]string
	// Isolated holds the hosts no other host can reach (a partition of that node).
	Isolated map[string]bool
}

// Runner starts and stops services somewhere and observes them.
type Runner interface {
	Start(ctx context.Context, s Service) error
	Stop(ctx context.Context, name string) error
	Observe(ctx context.Context) (Observation, error)
	// Addr is the address other services reach port of host at.
	Addr(host string, port int) string
}

// PlatformRunner runs services as instances of the platform the orchestrator runs on
// (platform.Instances): each on its host node, so the platform samples its CPU and memory like
// any component's and its traffic crosses the links between nodes.
type PlatformRunner struct {
	Platform platform.Instances
	LogDir   string
}

// serviceStopGrace is how long a stopped service has to end by itself.
const serviceStopGrace = 5 * time.Second

func (r *PlatformRunner) Start(ctx context.Context, s Service) error {
	if s.Host == "" {
		return fmt.Errorf("service %s: no host node", s.Name)
	}
	_, err := r.Platform.Start(ctx, platform.InstanceSpec{Name: s.Name, Node: s.Host, Args: s.Args, Env: s.Env, Dir: s.Out, LogDir: r.LogDir})
	return err
}

func (r *PlatformRunner) Stop(ctx context.Context, name string) error {
	return r.Platform.Stop(ctx, name, serviceStopGrace)
}

func (r *PlatformRunner) Observe(ctx context.Context) (Observation, error) {
	st, err := r.Platform.State(ctx)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{Exited: map[string]string{}, Isolated: map[string]bool{}}
	for _, in := range st.Instances {
		if strings.HasPrefix(in.Name, "fl-") && !in.Running {
			obs.Exited[in.Name] = in.Ended
		}
	}
	for _, n := range st.Nodes {
		if n.Isolated {
			obs.Isolated[n.Name] = true
		}
	}
	return obs, nil
}

func (r *PlatformRunner) Addr(host string, port int) string { return r.Platform.Addr(host, port) }

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

func (r *LocalRunner) Start(_ context.Context, s Service) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.procs == nil {
		r.procs = map[string]*localProc{}
	}
	if p := r.procs[s.Name]; p != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("service %s is already running", s.Name)
		}
	}
	if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
		return err
	}
	stdout, err := os.Create(filepath.Join(r.LogDir, s.Name+".stdout.log"))
	if err != nil {
		return err
	}
	stderr, err := os.Create(filepath.Join(r.LogDir, s.Name+".stderr.log"))
	if err != nil {
		stdout.Close()
		return err
	}
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Out
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := deathsig.Start(cmd); err != nil {
		stdout.Close()
		stderr.Close()
		return fmt.Errorf("start %s: %w", s.Name, err)
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
	return nil
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

func (r *LocalRunner) Addr(_ string, port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

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
