package httpecho

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// Config is the server's start-up configuration.
type Config struct {
	Listen string // host:port, default ":8080"
	// Name appears in every response body (default: os.Hostname), so clients behind a load
	// balancer can tell instances apart.
	Name     string
	Settings Settings
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown (default 30 s).
	ShutdownTimeout time.Duration
	Logger          *slog.Logger // default: slog.Default()
}

// DefaultConfig listens on :8080 with no delay.
func DefaultConfig() Config {
	return Config{Listen: ":8080", ShutdownTimeout: 30 * time.Second}
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Listen == "" {
		return errors.New("listen: want host:port, e.g. :8080")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen %q: want host:port, e.g. :8080", c.Listen)
	}
	return c.Settings.Validate()
}

// Server is an echo server; its handler is safe for concurrent use.
type Server struct {
	name     string
	log      *slog.Logger
	shutdown time.Duration
	settings atomic.Pointer[Settings]
	adminMu  sync.Mutex // serialises PUTs (read-modify-write); never taken by requests
	active   atomic.Int64
	mux      *http.ServeMux
}

// New builds a server from cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = ":8080"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{name: cfg.Name, log: cfg.Logger, shutdown: cfg.ShutdownTimeout, mux: http.NewServeMux()}
	st := cfg.Settings
	s.settings.Store(&st)
	s.mux.HandleFunc("/", s.echo)
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /admin/config", s.getConfig)
	s.mux.HandleFunc("PUT /admin/config", s.putConfig)
	s.mux.HandleFunc("/admin/config", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", "GET, PUT")
		http.Error(w, "method not allowed (allowed: GET, PUT)", http.StatusMethodNotAllowed)
	})
	return s, nil
}

// Handler returns the HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.mux }

// Settings returns the current settings.
func (s *Server) Settings() Settings { return *s.settings.Load() }

// padding is shared read-only filler for large responses.
var padding = func() []byte {
	b := make([]byte, 32<<10)
	for i := range b {
		b[i] = 'x'
	}
	b[len(b)-1] = '\n'
	return b
}()

func (s *Server) echo(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	n, _ := io.Copy(io.Discard, r.Body)
	st := s.settings.Load()
	if st.Delay > 0 {
		t := time.NewTimer(st.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return // the client is gone; nobody reads the answer
		}
	}
	burnCPU(st.CPUWork)
	msg := "echo from " + s.name + ": received " + strconv.FormatInt(n, 10) + " bytes\n"
	size := len(msg)
	if st.ResponseSize > 0 {
		size = st.ResponseSize
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	if size <= len(msg) {
		io.WriteString(w, msg[:size])
		return
	}
	io.WriteString(w, msg)
	for rest := size - len(msg); rest > 0; {
		k := min(rest, len(padding))
		if _, err := w.Write(padding[len(padding)-k:]); err != nil {
			return
		}
		rest -= k
	}
}

func (s *Server) getConfig(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, s.Settings())
}

// maxAdminBody bounds PUT bodies; a valid one is under 100 bytes.
const maxAdminBody = 64 << 10

func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxAdminBody {
		http.Error(w, fmt.Sprintf("body: larger than %d bytes", maxAdminBody), http.StatusRequestEntityTooLarge)
		return
	}
	s.adminMu.Lock()
	next, err := applyJSON(s.Settings(), body)
	if err == nil {
		s.settings.Store(&next)
	}
	s.adminMu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.log.Info("settings changed", "delay", next.Delay, "cpu_work", next.CPUWork, "response_size", next.ResponseSize)
	httpjson.Write(w, http.StatusOK, next)
}

// Serve answers on ln until ctx is cancelled, then stops accepting and drains in-flight
// requests (up to ShutdownTimeout). A clean drain returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("echo server listening", "addr", ln.Addr().String(), "name", s.name)
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdown)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc // http.ErrServerClosed once Shutdown started
	if err != nil {
		return fmt.Errorf("shutdown: %w (in flight: %d)", err, s.active.Load())
	}
	s.log.Info("echo server stopped")
	return nil
}

// Run listens on cfg.Listen and serves until ctx is cancelled.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	if cfg.Listen == "" {
		cfg.Listen = ":8080"
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}
