package rtdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/sse"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/stream/rtdb/ws"
)

// Config is the server's start-up configuration.
type Config struct {
	ListenAddr  string   // host:port, default ":9000" (the emulator's port)
	KVEndpoints []string // continuum kv or etcd client URLs, default http://127.0.0.1:2379
	// Prefix is the kv prefix every database lives under (default "/rtdb").
	Prefix string
	// DefaultNamespace is the database of requests without ?ns= (default "default").
	DefaultNamespace string
	// MaxBodyBytes bounds a write's body (default 16 MiB; Firebase allows 256 MB per REST write).
	MaxBodyBytes int64
	// RequestTimeout bounds one request's kv work (default 30 s).
	RequestTimeout  time.Duration
	DialTimeout     time.Duration // to the kv endpoints (default 5 s)
	ShutdownTimeout time.Duration // drain on shutdown (default 10 s)
	Logger          *slog.Logger  // default slog.Default()
	Now             func() time.Time
	Security        auth.Security // rules and authentication (package auth)
	// Stream configures listeners (SSE and the subscription hub); zero fields take defaults.
	Stream sse.StreamConfig

	// FirebaseSDKDir is the npm firebase package whose browser modules the dashboard loads
	// (default DefaultFirebaseSDKDir, the one make setup links into the clone).
	FirebaseSDKDir string
}

// DefaultConfig is the emulator's port, a local kv and a 16 MiB body limit.
func DefaultConfig() Config {
	return Config{
		ListenAddr: ":9000", KVEndpoints: []string{"http://127.0.0.1:2379"}, Prefix: "/rtdb",
		DefaultNamespace: "default", MaxBodyBytes: 16 << 20, RequestTimeout: 30 * time.Second,
		DialTimeout: 5 * time.Second, ShutdownTimeout: 10 * time.Second, Stream: sse.DefaultStreamConfig(),
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: want host:port, e.g. :9000", c.ListenAddr))
	}
	if len(c.KVEndpoints) == 0 {
		errs = append(errs, errors.New("endpoints: at least one kv/etcd client URL is required"))
	}
	for _, e := range c.KVEndpoints {
		if e == "" {
			errs = append(errs, errors.New("endpoints: empty URL"))
		}
	}
	if !strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("prefix %q: must start with / and not end with one", c.Prefix))
	}
	if !tree.ValidNamespace(c.DefaultNamespace) {
		errs = append(errs, fmt.Errorf("default namespace %q: lowercase letters, digits and '-' only", c.DefaultNamespace))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max body bytes %d: must be > 0", c.MaxBodyBytes))
	}
	if c.RequestTimeout <= 0 || c.DialTimeout <= 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("request and dial timeouts must be > 0, the shutdown timeout >= 0"))
	}
	if err := c.Stream.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Server serves the Firebase Realtime Database's protocols (REST, SSE streaming, WebSocket)
// on one store and one listener hub; it is an http.Handler safe for concurrent use.
type Server struct {
	cfg  Config
	kv   *clientv3.Client
	st   *store.Store
	log  *slog.Logger
	auth *auth.Verifier
	// hub serves every listener (SSE and WebSocket) from one kv watch.
	hub  *hub.Hub
	rest *rest.Server
	sse  *sse.Server
	ws   *ws.Server
}

// DefaultFirebaseSDKDir is where the dashboard finds the Firebase JS SDK by default.
const DefaultFirebaseSDKDir = ws.DefaultFirebaseSDKDir

// New connects to the kv endpoints (lazily: the first request fails if none answers).
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	verifier, err := auth.NewVerifier(cfg.Security, cfg.Now)
	if err != nil {
		return nil, err
	}
	kv, err := clientv3.New(clientv3.Config{Endpoints: cfg.KVEndpoints, DialTimeout: cfg.DialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("kv client: %w", err)
	}
	st, err := store.New(kv, store.Config{Prefix: cfg.Prefix, Now: cfg.Now, Logger: cfg.Logger, RulesFile: cfg.Security.RulesFile})
	if err != nil {
		kv.Close()
		return nil, err
	}
	stream := cfg.Stream.WithDefaults()
	h := hub.New(kv, hub.Config{Prefix: cfg.Prefix, ListenerBufferBytes: stream.ListenerBufferBytes, Logger: cfg.Logger})
	s := &Server{cfg: cfg, kv: kv, st: st, log: cfg.Logger, auth: verifier, hub: h}
	s.rest = rest.New(rest.Config{KV: kv, Store: st, Verifier: verifier, PushIDs: tree.NewPushIDs(cfg.Now), Logger: cfg.Logger,
		DefaultNamespace: cfg.DefaultNamespace, MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout, KVEndpoints: cfg.KVEndpoints})
	s.sse = sse.New(sse.Config{Hub: h, Store: st, Verifier: verifier, Logger: cfg.Logger,
		DefaultNamespace: cfg.DefaultNamespace, RequestTimeout: cfg.RequestTimeout, Stream: stream})
	s.ws = ws.New(ws.Config{Hub: h, Store: st, Verifier: verifier, Logger: cfg.Logger, DefaultNamespace: cfg.DefaultNamespace,
		MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout, Now: cfg.Now, FirebaseSDKDir: cfg.FirebaseSDKDir})
	return s, nil
}

// Hub is the server's subscription hub.
func (s *Server) Hub() *hub.Hub { return s.hub }

// Authenticate identifies the caller of r: nil for none, an *auth.AuthError for a bad credential.
func (s *Server) Authenticate(r *http.Request) (*auth.Auth, error) { return s.auth.Authenticate(r) }

// VerifyToken identifies the caller presenting tok (auth.Verifier.Verify).
func (s *Server) VerifyToken(tok string) (*auth.Auth, error) { return s.auth.Verify(tok) }

// MayRead reports whether the caller in ctx (auth.WithAuth) may read path in ns now: nil, or
// auth.ErrPermissionDenied, or the kv error. A query is allowed exactly when a read of its
// location is.
func (s *Server) MayRead(ctx context.Context, ns string, path []string) error {
	return s.st.ReadAllowedLazy(ctx, ns, path)
}

// StreamReadAuth is the rules' check for a listener (sse.Server.StreamReadAuth).
func (s *Server) StreamReadAuth(r *http.Request, ns string, path []string) (allowed bool, expires time.Time, err error) {
	return s.sse.StreamReadAuth(r, ns, path)
}

// Close ends the WebSocket connections and the listeners, then closes the kv client.
func (s *Server) Close() error {
	s.ws.Close()
	s.hub.Close()
	return s.kv.Close()
}

// waitKV waits up to DialTimeout for the kv store to answer a read, so that a server pointed at
// an address where nothing listens says so and exits instead of serving only errors.
func (s *Server) waitKV(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		_, err := s.kv.Get(rctx, s.cfg.Prefix+"/", clientv3.WithCountOnly())
		rcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kv at %s not answering within %v (--dial-timeout): %w", strings.Join(s.cfg.KVEndpoints, ","), s.cfg.DialTimeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Run checks that the kv store answers (within DialTimeout), serves cfg.ListenAddr until ctx
// ends, then drains requests in flight.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.waitKV(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(s.hub.Close) // streams end, so Shutdown need not wait for them
	s.log.Info("realtime database listening", "addr", ln.Addr().String(), "kv", strings.Join(cfg.KVEndpoints, ","))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	return hs.Shutdown(sctx)
}

// ServeHTTP routes a request to its protocol: WebSocket (/.ws), the dashboard, SSE streaming
// (a GET accepting text/event-stream) or REST.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		io.WriteString(w, "ok\n")
		return
	case r.URL.Path == "/.ws":
		s.ws.ServeHTTP(w, r) // the SDKs' WebSocket protocol
		return
	case strings.HasPrefix(r.URL.Path, ws.DashboardPath):
		s.ws.ServeDashboard(w, r) // the live page on the JS SDK
		return
	}
	if sse.WantsEventStream(r) {
		s.sse.ServeHTTP(w, r) // a stream: not bounded by RequestTimeout
		return
	}
	s.rest.ServeHTTP(w, r)
}
