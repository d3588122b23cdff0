package agent

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
)

// instance is one named instance of the node: a sequence of runs, of which at most the last is
// running. Its fields are guarded by the server's mu.
type instance struct {
	name     string
	dataDirs []string // of the latest run
	runs     []*run   // runs[i] is run i+1
	// cpuDone is the CPU time of the runs that have exited (their leader and what it waited
	// for), so that the instance's CPU stays cumulative across restarts.
	cpuDone float64
}

func (in *instance) last() *run {
	if len(in.runs) == 0 {
		return nil
	}
	return in.runs[len(in.runs)-1]
}

// run is one run of an instance.
type run struct {
	n    int
	pgid int // = the leader's pid (Setpgid)
	// start is the size of the stdout/stderr files when the run started: where its output
	// begins, since the files are appended to across runs. Set before the run is visible.
	start [2]int64
	// written counts the bytes the run has written to each stream so far (guarded by the
	// server's mu). Readers follow the file up to start+written.
	written [2]int64
	done    chan struct{} // closed once the run exited and its output is all in the files
	exit    Exit          // final once done is closed
}

func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func streamIndex(s string) int {
	if s == "stderr" {
		return 1
	}
	return 0
}

func (s *server) logPath(name, stream string) string {
	return filepath.Join(s.opts.StateDir, name+"."+stream+".log")
}

// logWriter appends a run's stream to its file and wakes the readers that follow it.
type logWriter struct {
	s *server
	r *run
	i int
	f *os.File
}

func (w *logWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.s.mu.Lock()
	w.r.written[w.i] += int64(n)
	w.s.notifyLocked()
	w.s.mu.Unlock()
	return n, err
}

// start starts a new run of req.Name.
func (s *server) start(req StartRequest) (int, error) {
	if err := validName(req.Name); err != nil {
		return 0, errorf(errBad, "%v", err)
	}
	if len(req.Args) == 0 || req.Args[0] == "" {
		return 0, errorf(errBad, "instance %s: no command (args is empty)", req.Name)
	}
	for _, kv := range req.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return 0, errorf(errBad, "instance %s: invalid env entry %q: use KEY=VALUE", req.Name, kv)
		}
	}
	args := append([]string(nil), req.Args...)
	if req.Binary != "" && args[0] == req.Binary {
		args[0] = s.opts.Self
	}
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return 0, errorf(errConflict, "agent is shutting down")
	}
	in := s.instances[req.Name]
	if in == nil {
		in = &instance{name: req.Name}
		s.instances[req.Name] = in
	}
	if l := in.last(); l != nil && !l.exited() {
		s.mu.Unlock()
		return 0, errorf(errConflict, "instance %s is running (run %d): stop it or wait for it before starting it again", req.Name, l.n)
	}
	if s.starting[req.Name] {
		s.mu.Unlock()
		return 0, errorf(errConflict, "instance %s is being started", req.Name)
	}
	// Reserve the name while starting (outside the lock: exec may be slow), so that two
	// concurrent starts of one name cannot both succeed.
	s.starting[req.Name] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.starting, req.Name)
		s.mu.Unlock()
	}()

	if req.Dir != "" {
		if err := os.MkdirAll(req.Dir, 0o755); err != nil {
			return 0, fmt.Errorf("instance %s: dir: %w", req.Name, err)
		}
	}
	r := &run{done: make(chan struct{})}
	var files [2]*os.File
	for i, stream := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(s.logPath(req.Name, stream), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			var st os.FileInfo
			if st, err = f.Stat(); err == nil {
				r.start[i] = st.Size()
			}
		}
		if err != nil {
			if files[0] != nil {
				files[0].Close()
			}
			return 0, fmt.Errorf("instance %s: %s file: %w", req.Name, stream, err)
		}
		files[i] = f
	}
	closeFiles := func() { files[0].Close(); files[1].Close() }

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), req.Env...)
	cmd.Dir = req.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // signals go to the whole group
	cmd.Stdout = &logWriter{s: s, r: r, i: 0, f: files[0]}
	cmd.Stderr = &logWriter{s: s, r: r, i: 1, f: files[1]}
	// A process the run left behind may hold its pipes open after the leader exits; WaitDelay
	// bounds how long the run's end waits for them.
	cmd.WaitDelay = s.opts.PipeGrace
	// The reaper must not reap a child of ours before it is in children (cmd.Wait would lose
	// its exit): it holds forkMu exclusively while it scans.
	s.forkMu.RLock()
	if err := cmd.Start(); err != nil {
		s.forkMu.RUnlock()
		closeFiles()
		return 0, errorf(errBad, "start instance %s: %v", req.Name, err)
	}
	r.pgid = cmd.Process.Pid
	s.mu.Lock()
	s.children[r.pgid] = true
	s.mu.Unlock()
	s.forkMu.RUnlock()
	reaped := func() {
		s.mu.Lock()
		delete(s.children, r.pgid)
		s.mu.Unlock()
	}

	s.mu.Lock()
	if s.down {
		// Serve's shutdown has already collected the runs to stop and may be waiting on wg,
		// which must not grow now: end this one here.
		s.mu.Unlock()
		_ = syscall.Kill(-r.pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		reaped()
		closeFiles()
		return 0, errorf(errConflict, "agent is shutting down")
	}
	r.n = len(in.runs) + 1
	in.runs = append(in.runs, r)
	in.dataDirs = req.DataDirs
	s.wg.Add(1) // under mu with down false: before shutdown, so before serve's wg.Wait
	s.mu.Unlock()
	s.opts.Logger.Info("instance started", "node", s.opts.Node, "name", req.Name, "run", r.n, "pid", r.pgid)

	go func() {
		defer s.wg.Done()
		_ = cmd.Wait() // the exit comes from ProcessState, also under ErrWaitDelay
		reaped()
		closeFiles()
		ex := Exit{Code: -1}
		cpu := 0.0
		if ps := cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				ex.Signal = ws.Signal().String()
			} else {
				ex.Code = ps.ExitCode()
			}
			cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
		}
		s.mu.Lock()
		r.exit = ex
		in.cpuDone += cpu
		close(r.done)
		s.notifyLocked()
		s.mu.Unlock()
		s.opts.Logger.Info("instance exited", "node", s.opts.Node, "name", req.Name, "run", r.n, "code", ex.Code, "signal", ex.Signal)
	}()
	return r.n, nil
}

// lookup returns instance name's run n (n = 0: its latest run).
func (s *server) lookup(name string, n int) (*run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(name, n)
}

func (s *server) lookupLocked(name string, n int) (*run, error) {
	in := s.instances[name]
	if in == nil || len(in.runs) == 0 {
		names := make([]string, 0, len(s.instances))
		for k, v := range s.instances {
			if len(v.runs) > 0 {
				names = append(names, k)
			}
		}
		return nil, errorf(errNotFound, "no instance %q on node %s (instances: %v)", name, s.opts.Node, names)
	}
	if n == 0 {
		return in.last(), nil
	}
	if n < 1 || n > len(in.runs) {
		return nil, errorf(errNotFound, "instance %s has no run %d (runs 1 to %d)", name, n, len(in.runs))
	}
	return in.runs[n-1], nil
}

// wait blocks until r exited or ctx ended.
func (s *server) wait(ctx context.Context, r *run) (Exit, error) {
	select {
	case <-r.done:
		return r.exit, nil
	case <-ctx.Done():
		return Exit{}, ctx.Err()
	}
}

// signal sends sig to the process group of name's latest run, or with name "" to every running
// instance's. A run that has exited is not signalled: its group id may be another's by now.
func (s *server) signal(name string, sig syscall.Signal) error {
	s.mu.Lock()
	var runs []*run
	if name == "" {
		for _, in := range s.instances {
			if l := in.last(); l != nil && !l.exited() {
				runs = append(runs, l)
			}
		}
	} else {
		r, err := s.lookupLocked(name, 0)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		if r.exited() {
			s.mu.Unlock()
			return errorf(errConflict, "instance %s is not running (run %d exited)", name, r.n)
		}
		runs = append(runs, r)
	}
	// Signalled under the lock, which the waiter takes to close done right after the reap: a
	// group id is only reused once every member is gone, so the window is the reap itself.
	defer s.mu.Unlock()
	for _, r := range runs {
		if err := syscall.Kill(-r.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %v to process group %d: %w", sig, r.pgid, err)
		}
	}
	return nil
}

// stop sends SIGTERM (and SIGCONT, since a paused process cannot act on it) to r's process
// group, SIGKILL after grace (at once when grace is 0), and returns how the run exited.
func (s *server) stop(ctx context.Context, r *run, grace time.Duration) (Exit, error) {
	if grace > 0 {
		s.killGroup(r, syscall.SIGTERM, syscall.SIGCONT)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-r.done:
			return r.exit, nil
		case <-t.C:
		case <-ctx.Done():
			return Exit{}, ctx.Err()
		}
	}
	s.killGroup(r, syscall.SIGKILL)
	select {
	case <-r.done:
		return r.exit, nil
	case <-ctx.Done():
		return Exit{}, ctx.Err()
	}
}

func (s *server) killGroup(r *run, sigs ...syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.exited() {
		return
	}
	for _, sig := range sigs {
		_ = syscall.Kill(-r.pgid, sig)
	}
}
