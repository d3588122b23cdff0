package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// Options configures Serve.
type Options struct {
	Node     string // scenario node name, for logs and errors
	StateDir string // where stdout/stderr files are kept (default os.TempDir()/continuum-agent)
	Self     string // this agent's own executable (default os.Executable())
	Logger   *slog.Logger
	// StopGrace is how long Serve waits, when ctx ends, between SIGTERM and SIGKILL to the
	// instances still running (default 5s).
	StopGrace time.Duration
	// Reap makes the agent reap the orphans that the kernel hands to it (processes its
	// instances started and left behind), which would otherwise stay zombies: set it when the
	// agent is its pod's PID 1, or a child subreaper (prctl PR_SET_CHILD_SUBREAPER).
	Reap bool
	// PipeGrace bounds how long a run's end waits, after its leader exited, for processes it
	// left behind to close its stdout/stderr (default 2s).
	PipeGrace time.Duration
}

func (o *Options) defaults() error {
	if o.StateDir == "" {
		o.StateDir = filepath.Join(os.TempDir(), "continuum-agent")
	}
	if o.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		o.Self = self
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.PipeGrace <= 0 {
		o.PipeGrace = 2 * time.Second
	}
	return os.MkdirAll(o.StateDir, 0o755)
}

// server is the agent's state.
type server struct {
	opts Options

	mu        sync.Mutex
	instances map[string]*instance // guarded by mu
	starting  map[string]bool      // names being started; guarded by mu
	down      bool                 // Serve is stopping; guarded by mu
	// changed is closed (and replaced) under mu whenever a run writes output or exits: the
	// readers that follow output wait on it, having read it under mu, so no wakeup is lost.
	changed chan struct{}
	conns   map[net.Conn]struct{} // hijacked dial connections; guarded by mu
	// children are the pids of the runs' leaders not yet reaped by their cmd.Wait; guarded
	// by mu. The reaper leaves them alone.
	children map[int]bool
	// forkMu is held shared from a run's fork until its pid is in children, and exclusively by
	// the reaper's scan: so every zombie child the reaper sees unlisted is an orphan.
	forkMu sync.RWMutex

	wg sync.WaitGroup // the runs' waiters and the dial copiers
}

func newServer(opts Options) (*server, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &server{
		opts:      opts,
		instances: map[string]*instance{},
		starting:  map[string]bool{},
		changed:   make(chan struct{}),
		conns:     map[net.Conn]struct{}{},
		children:  map[int]bool{},
	}, nil
}

func (s *server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Serve serves the agent API on ln until ctx ends, then stops every instance (SIGTERM, SIGKILL
// after Options.StopGrace) and returns.
func Serve(ctx context.Context, ln net.Listener, opts Options) error {
	s, err := newServer(opts)
	if err != nil {
		ln.Close()
		return err
	}
	return s.serve(ctx, ln)
}

func (s *server) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.opts.Logger.Info("agent listening", "node", s.opts.Node, "addr", ln.Addr().String())
	if s.opts.Reap {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); s.reapLoop(stop) }()
		defer func() { close(stop); <-done }()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.shutdown()
	_ = srv.Close()
	if serveErr == nil {
		serveErr = <-errc
	}
	s.wg.Wait()
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return serveErr
}

// shutdown refuses new runs, stops every running one and closes the dial connections.
func (s *server) shutdown() {
	s.mu.Lock()
	s.down = true
	var runs []*run
	for _, in := range s.instances {
		if l := in.last(); l != nil && !l.exited() {
			runs = append(runs, l)
		}
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.stop(context.Background(), r, s.opts.StopGrace)
		}()
	}
	wg.Wait()
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, map[string]string{"node": s.opts.Node})
	})
	mux.HandleFunc("POST /instances", s.handleStart)
	mux.HandleFunc("GET /instances/{name}/runs/{run}/wait", s.handleWait)
	mux.HandleFunc("GET /instances/{name}/runs/{run}/output/{stream}", s.handleOutput)
	mux.HandleFunc("POST /instances/{name}/stop", s.handleStop)
	mux.HandleFunc("POST /signal", s.handleSignal)
	mux.HandleFunc("PUT /files", s.handlePush)
	mux.HandleFunc("GET /files", s.handlePull)
	mux.HandleFunc("GET /dial", s.handleDial)
	mux.HandleFunc("GET /sample", s.handleSample)
	return mux
}

func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, errBad):
		status = http.StatusBadRequest
	case errors.Is(err, errNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errConflict):
		status = http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
	}
	httpjson.Error(w, status, err.Error())
}

// maxJSONBody bounds the JSON request bodies; they are small.
const maxJSONBody = 1 << 20

func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := httpjson.Decode(w, r, maxJSONBody, v); err != nil {
		return errorf(errBad, "%v", err)
	}
	return nil
}

// runOf resolves the {name} and {run} of a request's path.
func (s *server) runOf(r *http.Request) (*run, error) {
	name := r.PathValue("name")
	n, err := strconv.Atoi(r.PathValue("run"))
	if err != nil || n < 1 {
		return nil, errorf(errBad, "invalid run %q: runs are numbered from 1", r.PathValue("run"))
	}
	return s.lookup(name, n)
}

func (s *server) handleStart(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	n, err := s.start(req)
	if err != nil {
		writeError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, startResponse{Run: n})
}

func (s *server) handleWait(w http.ResponseWriter, r *http.Request) {
	run, err := s.runOf(r)
	if err == nil {
		var ex Exit
		if ex, err = s.wait(r.Context(), run); err == nil {
			httpjson.Write(w, http.StatusOK, ex)
			return
		}
	}
	writeError(w, err)
}

func (s *server) handleStop(w http.ResponseWriter, r *http.Request) {
	var req stopRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.GraceMillis < 0 {
		writeError(w, errorf(errBad, "invalid grace_ms %d: use 0 or more", req.GraceMillis))
		return
	}
	run, err := s.lookup(r.PathValue("name"), 0)
	if err == nil {
		var ex Exit
		if ex, err = s.stop(r.Context(), run, time.Duration(req.GraceMillis)*time.Millisecond); err == nil {
			httpjson.Write(w, http.StatusOK, ex)
			return
		}
	}
	writeError(w, err)
}

func (s *server) handleSignal(w http.ResponseWriter, r *http.Request) {
	var req signalRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Signal < 1 || req.Signal > 64 {
		writeError(w, errorf(errBad, "invalid signal %d: use a signal number from 1 to 64", req.Signal))
		return
	}
	if err := s.signal(req.Name, syscall.Signal(req.Signal)); err != nil {
		writeError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct{}{})
}

// handleOutput streams a run's stream from its first byte, as it is written, and ends once the
// run has exited and all it wrote has been sent.
func (s *server) handleOutput(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	if err := validStream(stream); err != nil {
		writeError(w, errorf(errBad, "%v", err))
		return
	}
	run, err := s.runOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := os.Open(s.logPath(r.PathValue("name"), stream))
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	i := streamIndex(stream)
	var sent int64
	buf := make([]byte, 64<<10)
	for {
		s.mu.Lock()
		written, exited, changed := run.written[i], run.exited(), s.changed
		s.mu.Unlock()
		for sent < written {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), written-sent)], run.start[i]+sent)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				sent += int64(n)
			}
			if err != nil && (n == 0 || !errors.Is(err, io.EOF)) {
				// The stream is cut short: abort the response so the client sees an error
				// rather than a complete body.
				panic(http.ErrAbortHandler)
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if exited {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}
