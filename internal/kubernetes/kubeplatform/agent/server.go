package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure an agent.
type Options struct {
	Node     string // scenario node name, for logs
	StateDir string // where stdout and stderr files are kept (default <temp>/continuum-agent)
	Self     string // this agent's own executable (default os.Executable())
	Logger   *slog.Logger
}

// server is the agent's state: its instances and their runs.
type server struct {
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	insts map[string]*instance
	down  bool
}

// instance is every run of one name.
type instance struct {
	req  StartRequest
	runs []*run // runs[i] is run i+1
	// cpuExited is the CPU time of the process groups of runs that have exited.
	cpuExited float64
}

// run is one start of an instance.
type run struct {
	n      int
	pgid   int
	start  time.Time
	paths  [2]string // stdout, stderr files
	done   chan struct{}
	exit   Exit
	cpuMax float64 // the largest CPU time seen for its process group while it ran
}

func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Serve serves the agent API on ln until ctx ends, then stops every instance (SIGTERM, SIGKILL
// after 5 s) and returns.
func Serve(ctx context.Context, ln net.Listener, opts Options) error {
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(os.TempDir(), "continuum-agent")
	}
	if opts.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("agent: own executable: %w", err)
		}
		opts.Self = self
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return fmt.Errorf("agent: state dir: %w", err)
	}
	s := &server{opts: opts, log: opts.Logger.With("node", opts.Node), insts: map[string]*instance{}}
	hs := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("agent serving", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		s.stopAll()
		return err
	case <-ctx.Done():
	}
	s.stopAll()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	_ = hs.Close()
	return nil
}

func (s *server) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	m.HandleFunc("POST /v1/instances", s.handleStart)
	m.HandleFunc("GET /v1/instances/{name}/runs/{run}/wait", s.handleWait)
	m.HandleFunc("GET /v1/instances/{name}/runs/{run}/output", s.handleOutput)
	m.HandleFunc("POST /v1/instances/{name}/stop", s.handleStop)
	m.HandleFunc("POST /v1/signal", s.handleSignal)
	m.HandleFunc("PUT /v1/files", s.handlePush)
	m.HandleFunc("GET /v1/files", s.handlePull)
	m.HandleFunc("GET /v1/dial", s.handleDial)
	m.HandleFunc("GET /v1/sample", s.handleSample)
	return m
}

// httpError is an error with the status the API answers it with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		status = he.status
	}
	http.Error(w, err.Error(), status)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *server) handleStart(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, badRequest("start: body: %v", err))
		return
	}
	n, err := s.start(req)
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, map[string]int{"run": n})
}

// start starts a new run of req.Name.
func (s *server) start(req StartRequest) (int, error) {
	if err := checkName(req.Name); err != nil {
		return 0, badRequest("start: %v", err)
	}
	if len(req.Args) == 0 {
		return 0, badRequest("start %s: args: give the program and its arguments", req.Name)
	}
	prog := req.Args[0]
	if req.Binary != "" && prog == req.Binary {
		prog = s.opts.Self
	}
	if strings.Contains(prog, "/") {
		if fi, err := os.Stat(prog); err != nil || fi.IsDir() {
			return 0, badRequest("start %s: program %s: not found on node %s", req.Name, prog, s.opts.Node)
		}
	} else if p, err := exec.LookPath(prog); err != nil {
		return 0, badRequest("start %s: program %q: not in PATH on node %s", req.Name, prog, s.opts.Node)
	} else {
		prog = p
	}
	if req.Dir != "" {
		if !filepath.IsAbs(req.Dir) {
			return 0, badRequest("start %s: dir %q: want an absolute path", req.Name, req.Dir)
		}
		if err := os.MkdirAll(req.Dir, 0o755); err != nil {
			return 0, fmt.Errorf("start %s: dir: %w", req.Name, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return 0, &httpError{http.StatusServiceUnavailable, "the agent is shutting down"}
	}
	in := s.insts[req.Name]
	if in != nil && len(in.runs) > 0 && !in.runs[len(in.runs)-1].exited() {
		return 0, &httpError{http.StatusConflict, fmt.Sprintf("start %s: run %d is still running", req.Name, len(in.runs))}
	}
	if in == nil {
		in = &instance{}
		s.insts[req.Name] = in
	}
	in.req = req
	rn := &run{n: len(in.runs) + 1, done: make(chan struct{})}
	var files [2]*os.File
	for i, stream := range []string{"stdout", "stderr"} {
		rn.paths[i] = filepath.Join(s.opts.StateDir, fmt.Sprintf("%s.%d.%s", req.Name, rn.n, stream))
		f, err := os.OpenFile(rn.paths[i], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			if files[0] != nil {
				files[0].Close()
			}
			return 0, fmt.Errorf("start %s: %w", req.Name, err)
		}
		files[i] = f
	}
	cmd := exec.Command(prog, req.Args[1:]...)
	cmd.Args[0] = req.Args[0]
	cmd.Env = append(os.Environ(), req.Env...)
	cmd.Dir = req.Dir
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Start()
	files[0].Close()
	files[1].Close()
	if err != nil {
		return 0, badRequest("start %s: %v", req.Name, err)
	}
	rn.pgid, rn.start = cmd.Process.Pid, time.Now()
	in.runs = append(in.runs, rn)
	s.log.Info("instance started", "name", req.Name, "run", rn.n, "pid", rn.pgid)
	go s.reap(req.Name, in, rn, cmd)
	return rn.n, nil
}

// reap waits for a run's process and records how it exited; whatever else of its process group
// is left is killed, as the testbed kills a component's cgroup.
func (s *server) reap(name string, in *instance, rn *run, cmd *exec.Cmd) {
	err := cmd.Wait()
	ex := Exit{}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ex = Exit{Code: -1, Signal: ws.Signal().String()}
		} else {
			ex.Code = ee.ExitCode()
		}
	} else if err != nil {
		ex.Code = -1
	}
	_ = syscall.Kill(-rn.pgid, syscall.SIGKILL)
	cpu := 0.0
	if ps := cmd.ProcessState; ps != nil {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	s.mu.Lock()
	rn.exit = ex
	in.cpuExited += max(cpu, rn.cpuMax)
	close(rn.done)
	s.mu.Unlock()
	s.log.Info("instance exited", "name", name, "run", rn.n, "code", ex.Code, "signal", ex.Signal)
}

// lookup finds run n of name (n 0: the latest).
func (s *server) lookup(name string, n int) (*instance, *run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.insts[name]
	if in == nil || len(in.runs) == 0 {
		names := make([]string, 0, len(s.insts))
		for k := range s.insts {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, nil, notFound("no instance %q on node %s (instances: %s)", name, s.opts.Node, strings.Join(names, ", "))
	}
	if n == 0 {
		n = len(in.runs)
	}
	if n < 1 || n > len(in.runs) {
		return nil, nil, notFound("instance %s has no run %d (runs 1 to %d)", name, n, len(in.runs))
	}
	return in, in.runs[n-1], nil
}

func (s *server) runFromPath(r *http.Request) (*run, error) {
	n, err := strconv.Atoi(r.PathValue("run"))
	if err != nil || n < 1 {
		return nil, badRequest("run %q: want a run number (1, 2, ...)", r.PathValue("run"))
	}
	_, rn, err := s.lookup(r.PathValue("name"), n)
	return rn, err
}

func (s *server) handleWait(w http.ResponseWriter, r *http.Request) {
	rn, err := s.runFromPath(r)
	if err != nil {
		writeError(w, err)
		return
	}
	select {
	case <-rn.done:
	case <-r.Context().Done():
		return
	}
	s.mu.Lock()
	ex := rn.exit
	s.mu.Unlock()
	writeJSON(w, ex)
}

// outputPoll is how often a followed output file is checked for more bytes: instances write
// progress lines about once a second, so this adds at most a fraction of that.
const outputPoll = 50 * time.Millisecond

func (s *server) handleOutput(w http.ResponseWriter, r *http.Request) {
	rn, err := s.runFromPath(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var path string
	switch stream := r.URL.Query().Get("stream"); stream {
	case "stdout":
		path = rn.paths[0]
	case "stderr":
		path = rn.paths[1]
	default:
		writeError(w, badRequest("output: stream %q: want stdout or stderr", stream))
		return
	}
	f, err := os.Open(path)
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 64<<10)
	for {
		// Whether the run had exited is read before the file: bytes it wrote before exiting
		// are then all in the file, and the read below drains them before returning.
		exited := rn.exited()
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil || n == 0 {
				break
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if exited {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-rn.done:
		case <-time.After(outputPoll):
		}
	}
}

func (s *server) handleStop(w http.ResponseWriter, r *http.Request) {
	grace, err := time.ParseDuration(r.URL.Query().Get("grace"))
	if err != nil || grace < 0 {
		writeError(w, badRequest("stop: grace %q: want a duration such as 5s", r.URL.Query().Get("grace")))
		return
	}
	_, rn, err := s.lookup(r.PathValue("name"), 0)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, s.stop(rn, grace))
}

// stop sends SIGTERM to a run's process group, SIGKILL after grace, and returns how it exited.
func (s *server) stop(rn *run, grace time.Duration) Exit {
	if !rn.exited() {
		_ = syscall.Kill(-rn.pgid, syscall.SIGCONT) // a paused group cannot handle SIGTERM
		_ = syscall.Kill(-rn.pgid, syscall.SIGTERM)
		select {
		case <-rn.done:
		case <-time.After(grace):
			_ = syscall.Kill(-rn.pgid, syscall.SIGKILL)
			<-rn.done
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return rn.exit
}

func (s *server) handleSignal(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sig, ok := signals[q.Get("sig")]
	if !ok {
		writeError(w, badRequest("signal %q: want TERM, KILL, STOP, CONT, INT, HUP, USR1 or USR2", q.Get("sig")))
		return
	}
	var targets []*run
	if name := q.Get("name"); name != "" {
		_, rn, err := s.lookup(name, 0)
		if err != nil {
			writeError(w, err)
			return
		}
		targets = append(targets, rn)
	} else {
		s.mu.Lock()
		for _, in := range s.insts {
			targets = append(targets, in.runs[len(in.runs)-1])
		}
		s.mu.Unlock()
	}
	signalled := 0
	for _, rn := range targets {
		if !rn.exited() && syscall.Kill(-rn.pgid, sig) == nil {
			signalled++
		}
	}
	writeJSON(w, map[string]int{"signalled": signalled})
}

// stopAll stops every running instance at once (SIGTERM, SIGKILL after 5 s) and refuses new ones.
func (s *server) stopAll() {
	s.mu.Lock()
	s.down = true
	var running []*run
	for _, in := range s.insts {
		if rn := in.runs[len(in.runs)-1]; !rn.exited() {
			running = append(running, rn)
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, rn := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop(rn, 5*time.Second)
		}()
	}
	wg.Wait()
}
