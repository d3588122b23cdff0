package testbed

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// ProcSpec describes a process to run inside a node.
type ProcSpec struct {
	Name string   `json:"name"` // unique within the testbed; also the process's cgroup name
	Node string   `json:"node"`
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"` // added to the supervisor's environment
	Dir  string   `json:"dir,omitempty"`
	// LogDir receives <node>.<name>.stdout.log and .stderr.log (default: the testbed's dir/logs).
	LogDir string `json:"log_dir,omitempty"`
	// DataDirs are reported as the process's disk usage by the samplers.
	DataDirs []string `json:"data_dirs,omitempty"`
	// CPUs, if > 0, limits the process (and what it starts) to that many cores, inside its
	// node's own limit: a function instance limited to one core, as seeds/001 runs them.
	CPUs float64 `json:"cpus,omitempty"`
	// Memory, if > 0, limits the process (and what it starts) to that many bytes.
	Memory int64 `json:"memory,omitempty"`
	// StopSignal is what Stop sends first (0: SIGTERM).
	StopSignal syscall.Signal `json:"stop_signal,omitempty"`
	// Service, if set, declares the process an instance of a service (reported by Status).
	Service *Service `json:"service,omitempty"`
	// Stdout, if set, also receives the process's stdout (e.g. to parse progress lines).
	Stdout io.Writer `json:"-"`
	// HostMounts runs the process in the node's network namespace but the host's mount
	// namespace (launcher.go): it sees the cgroup filesystem and shares its mounts with the
	// host and the node's other host-mounts processes, but not the node's /etc/hosts. For
	// daemons that manage cgroups and mounts: kubelet, containerd.
	HostMounts bool `json:"host_mounts,omitempty"`
}

// ProcStatus is a snapshot of a supervised process.
type ProcStatus struct {
	Name     string    `json:"name"`
	Node     string    `json:"node"`
	PID      int       `json:"pid"`
	State    string    `json:"state"` // running, exited
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"` // set when killed by a signal
	Restarts int       `json:"restarts"`
	Started  time.Time `json:"started"`
	Service  *Service  `json:"service,omitempty"`
	// CPUSeconds is the CPU time its cgroup has used so far (running processes only).
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
}

// Proc is a supervised process; Restart starts the same spec again under the same name.
type Proc struct {
	tb   *Testbed
	spec ProcSpec
	n    *node

	restartMu sync.Mutex // one Restart at a time: two would start two runs in one cgroup

	mu       sync.Mutex
	pid      int
	started  time.Time
	done     chan struct{}
	exitCode int
	signal   string
	restarts int
	stopping bool
}

var procNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Start runs spec inside its node, in the cgroup <node>/<name>, with stdout/stderr captured.
func (tb *Testbed) Start(spec ProcSpec) (*Proc, error) {
	if !procNameRE.MatchString(spec.Name) || spec.Name == "exec" {
		return nil, fmt.Errorf("invalid process name %q: use letters, digits, '.', '_' and '-' (and not \"exec\")", spec.Name)
	}
	if len(spec.Args) == 0 {
		return nil, fmt.Errorf("process %s: no command", spec.Name)
	}
	if spec.Service != nil {
		if err := spec.Service.Validate(); err != nil {
			return nil, fmt.Errorf("process %s: %w", spec.Name, err)
		}
	}
	n, err := tb.node(spec.Node)
	if err != nil {
		return nil, err
	}
	tb.mu.Lock()
	if tb.down {
		tb.mu.Unlock()
		return nil, errors.New("testbed is shutting down")
	}
	if _, dup := tb.procs[spec.Name]; dup {
		tb.mu.Unlock()
		return nil, fmt.Errorf("process %q already exists", spec.Name)
	}
	// Reserve the name with a nil entry while starting: the process becomes visible (status,
	// faults, Down) only once it has a pid, so nothing signals a process group that is not there.
	tb.procs[spec.Name] = nil
	tb.mu.Unlock()
	p := &Proc{tb: tb, spec: spec, n: n}
	err = p.start()
	tb.mu.Lock()
	if err != nil {
		delete(tb.procs, spec.Name)
		tb.mu.Unlock()
		return nil, err
	}
	tb.procs[spec.Name] = p
	down := tb.down
	tb.mu.Unlock()
	if down { // Down ran while we were starting and could not see this process
		_ = p.Stop(time.Second)
		return nil, errors.New("testbed is shutting down")
	}
	return p, nil
}

func (p *Proc) cgroupPath() string { return p.n.cgroup + "/" + p.spec.Name }

func (p *Proc) start() error {
	tb := p.tb
	if err := tb.cg.create(p.cgroupPath()); err != nil {
		return err
	}
	if p.spec.CPUs > 0 {
		if err := tb.cg.setCPU(p.cgroupPath(), p.spec.CPUs); err != nil {
			return fmt.Errorf("process %s: cpu limit: %w", p.spec.Name, err)
		}
	}
	if p.spec.Memory > 0 {
		if err := tb.cg.setMemory(p.cgroupPath(), p.spec.Memory); err != nil {
			return fmt.Errorf("process %s: memory limit: %w", p.spec.Name, err)
		}
	}
	logDir := p.spec.LogDir
	if logDir == "" {
		logDir = filepath.Join(tb.dir, "logs")
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	stdout, err := os.OpenFile(LogPath(logDir, p.n.name, p.spec.Name, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	stderr, err := os.OpenFile(LogPath(logDir, p.n.name, p.spec.Name, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		stdout.Close()
		return err
	}
	cmd := launcherCmd(tb.launcher, p.n.ns, p.n.name, p.cgroupPath(), p.spec.HostMounts, p.spec.Args)
	cmd.SysProcAttr.Setpgid = true // Stop signals the whole process group
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Dir = p.spec.Dir
	cmd.Stdout = stdout
	if p.spec.Stdout != nil {
		cmd.Stdout = io.MultiWriter(stdout, p.spec.Stdout)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		stdout.Close()
		stderr.Close()
		return fmt.Errorf("start %s on %s: %w", p.spec.Name, p.n.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.pid = cmd.Process.Pid
	p.started = time.Now()
	p.done = done
	p.exitCode, p.signal, p.stopping = 0, "", false
	p.mu.Unlock()
	tb.log.Info("process started", "name", p.spec.Name, "node", p.n.name, "pid", p.pid)
	go func() {
		err := cmd.Wait()
		stdout.Close()
		stderr.Close()
		code, sig := 0, ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code, sig = -1, ws.Signal().String()
			} else {
				code = ee.ExitCode()
			}
		} else if err != nil {
			code = -1
		}
		p.mu.Lock()
		p.exitCode, p.signal = code, sig
		p.mu.Unlock()
		tb.log.Info("process exited", "name", p.spec.Name, "node", p.n.name, "code", code, "signal", sig)
		close(done)
	}()
	return nil
}

// Done is closed when the current run of the process has exited.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Status returns a snapshot.
func (p *Proc) Status() ProcStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := ProcStatus{Name: p.spec.Name, Node: p.n.name, PID: p.pid, State: "running", Restarts: p.restarts,
		Started: p.started, ExitCode: p.exitCode, Signal: p.signal, Service: p.spec.Service}
	select {
	case <-p.done:
		st.State = "exited"
	default:
		// CPU of everything in its cgroup (what it started too), as a container's CPU is.
		if d, err := p.tb.cg.cpuUsage(p.cgroupPath()); err == nil {
			st.CPUSeconds = d.Seconds()
		}
	}
	return st
}

// Exit is how the current run of the process exited (platform.Instance); final once Done is closed.
func (p *Proc) Exit() platform.Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return platform.Exit{Code: p.exitCode, Signal: p.signal}
}

// Spec returns the spec the process was started with.
func (p *Proc) Spec() ProcSpec { return p.spec }

// Stop asks the process to exit (its stop signal, SIGTERM by default, to its process group),
// waits up to grace, then kills everything left in its cgroup. It returns once the process has
// exited.
func (p *Proc) Stop(grace time.Duration) error {
	p.mu.Lock()
	pid, done := p.pid, p.done
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-done:
		_, _ = p.tb.cg.signal(p.cgroupPath(), syscall.SIGKILL) // orphans it may have left
		return nil
	default:
	}
	sig := p.spec.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(-pid, syscall.SIGCONT) // a paused process cannot act on its stop signal
	select {
	case <-done:
	case <-time.After(grace):
		_, _ = p.tb.cg.signal(p.cgroupPath(), syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("process %s (pid %d) did not exit after SIGKILL", p.spec.Name, pid)
		}
	}
	_, _ = p.tb.cg.signal(p.cgroupPath(), syscall.SIGKILL)
	return nil
}

// Kill sends SIGKILL to every process of this component (the supervisor records the exit).
func (p *Proc) Kill() error {
	_, err := p.tb.cg.signal(p.cgroupPath(), syscall.SIGKILL)
	return err
}

// Restart stops the process gracefully and starts it again with the same spec.
func (p *Proc) Restart(grace time.Duration) error {
	p.restartMu.Lock()
	defer p.restartMu.Unlock()
	if err := p.Stop(grace); err != nil {
		return err
	}
	p.mu.Lock()
	p.restarts++
	p.mu.Unlock()
	return p.start()
}

// Proc returns the supervised process with that name.
func (tb *Testbed) Proc(name string) (*Proc, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p, ok := tb.procs[name]
	if !ok || p == nil {
		names := make([]string, 0, len(tb.procs))
		for n := range tb.procs {
			names = append(names, n)
		}
		return nil, fmt.Errorf("no process %q (running: %v)", name, names)
	}
	return p, nil
}

// Procs returns the status of every supervised process.
func (tb *Testbed) Procs() []ProcStatus {
	tb.mu.Lock()
	ps := make([]*Proc, 0, len(tb.procs))
	for _, p := range tb.procs {
		if p != nil {
			ps = append(ps, p)
		}
	}
	tb.mu.Unlock()
	out := make([]ProcStatus, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Status())
	}
	return out
}

// Remove stops and forgets a process.
func (tb *Testbed) Remove(name string, grace time.Duration) error {
	p, err := tb.Proc(name)
	if err != nil {
		return err
	}
	err = p.Stop(grace)
	tb.mu.Lock()
	delete(tb.procs, name)
	tb.mu.Unlock()
	_ = removeTree(tb.cg.ctrlDir("cpu", p.cgroupPath()))
	for _, d := range tb.cg.dirs(p.cgroupPath()) {
		_ = removeTree(d)
	}
	return err
}

// LogPath is where a process's output stream ("stdout" or "stderr") goes: <dir>/<node>.<name>.<stream>.log
// (platform.LogPath, every platform's convention).
func LogPath(dir, node, name, stream string) string { return platform.LogPath(dir, node, name, stream) }
