package rtdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
	Security        Security // rules and authentication (auth.go)
	// Stream configures listeners (SSE and the subscription hub); zero fields take defaults.
	Stream StreamConfig

	// FirebaseSDKDir is the npm firebase package whose browser modules the dashboard loads
	// (default DefaultFirebaseSDKDir, the one make setup links into the clone).
	FirebaseSDKDir string
}

// DefaultConfig is the emulator's port, a local kv and a 16 MiB body limit.
func DefaultConfig() Config {
	return Config{
		ListenAddr: ":9000", KVEndpoints: []string{"http://127.0.0.1:2379"}, Prefix: "/rtdb",
		DefaultNamespace: "default", MaxBodyBytes: 16 << 20, RequestTimeout: 30 * time.Second,
		DialTimeout: 5 * time.Second, ShutdownTimeout: 10 * time.Second, Stream: DefaultStreamConfig(),
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
	if !validNamespace(c.DefaultNamespace) {
		errs = append(errs, fmt.Errorf("default namespace %q: lowercase letters, digits and '-' only", c.DefaultNamespace))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max body bytes %d: must be > 0", c.MaxBodyBytes))
	}
	if c.RequestTimeout <= 0 || c.DialTimeout <= 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("request and dial timeouts must be > 0, the shutdown timeout >= 0"))
	}
	if err := c.Stream.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Server serves the Firebase Realtime Database REST protocol; it is an http.Handler safe for
// concurrent use.
type Server struct {
	cfg  Config
	kv   *clientv3.Client
	st   *store
	push *PushIDs
	log  *slog.Logger
	auth *authenticator
	// hub serves every listener (SSE here, the WebSocket protocol too) from one kv watch.
	hub    *Hub
	stream StreamConfig
	ws     wsState // the WebSocket protocol's connections (ws.go); their listens are on hub
}

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
	auth, err := newAuthenticator(cfg)
	if err != nil {
		return nil, err
	}
	kv, err := clientv3.New(clientv3.Config{Endpoints: cfg.KVEndpoints, DialTimeout: cfg.DialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("kv client: %w", err)
	}
	rs, err := newRuleStore(kv, cfg)
	if err != nil {
		kv.Close()
		return nil, err
	}
	stream := cfg.Stream.withDefaults()
	hub := NewHub(kv, HubConfig{Prefix: cfg.Prefix, ListenerBufferBytes: stream.ListenerBufferBytes, Logger: cfg.Logger})
	s := &Server{cfg: cfg, kv: kv, st: &store{kv: kv, prefix: cfg.Prefix, now: cfg.Now, rules: rs},
		push: NewPushIDs(cfg.Now), log: cfg.Logger, auth: auth, hub: hub, stream: stream}
	if s.stream.ReadAuth == nil { // the rules on SSE listeners (auth_sse.go)
		s.stream.ReadAuth = s.streamGrant
	}
	return s, nil
}

// Hub is the server's subscription hub, for protocols served beside REST (the WebSocket one).
func (s *Server) Hub() *Hub { return s.hub }

// Close ends the WebSocket connections and the listeners, then closes the kv client.
func (s *Server) Close() error {
	s.closeWS()
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

// httpError is an answer other than 200.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Write(b)
}

// ServeHTTP answers GET, PUT, PATCH, POST and DELETE on /<path>.json.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		io.WriteString(w, "ok\n")
		return
	case r.URL.Path == "/.ws":
		s.serveWS(w, r) // the SDKs' WebSocket protocol (ws.go)
		return
	case strings.HasPrefix(r.URL.Path, dashboardPath):
		s.serveDashboard(w, r) // the live page on the JS SDK (ws_dashboard.go)
		return
	}
	if wantsEventStream(r) {
		s.serveSSE(w, r) // a stream: not bounded by RequestTimeout
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	method := r.Method
	if o := r.Header.Get("X-HTTP-Method-Override"); o != "" && method == http.MethodPost {
		method = strings.ToUpper(o)
	}
	if o := r.URL.Query().Get("x-http-method-override"); o != "" && method == http.MethodPost {
		method = strings.ToUpper(o)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	a, err := s.Authenticate(r)
	if err != nil {
		writeAuthError(w, err)
		return
	}
	ctx = WithAuth(ctx, a)
	if r.URL.Path == settingsPath {
		err = s.serveSettings(ctx, w, r, method)
	} else {
		err = s.serve(ctx, w, r, method)
	}
	if err != nil {
		var he *httpError
		var pf preconditionFailed
		switch {
		case errors.As(err, &he):
			writeError(w, he.code, he.msg)
		case errors.As(err, &pf):
			w.Header().Set("ETag", etag(pf.current))
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusPreconditionFailed)
			w.Write(encode(pf.current, false))
		case errors.Is(err, errTooLarge):
			writeError(w, http.StatusBadRequest, err.Error())
		case errors.Is(err, ErrPermissionDenied):
			writeAuthError(w, err)
		case errors.Is(err, errBusy):
			writeError(w, http.StatusServiceUnavailable, err.Error())
		default:
			s.log.Warn("request failed", "method", method, "path", r.URL.Path, "err", err)
			writeError(w, http.StatusInternalServerError, "Internal error: "+err.Error())
		}
	}
}

func (s *Server) serve(ctx context.Context, w http.ResponseWriter, r *http.Request, method string) error {
	q := r.URL.Query()
	ns := q.Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !validNamespace(ns) {
		return badRequest("Invalid namespace %q: lowercase letters, digits and '-' only", ns)
	}
	if r.URL.Path == ConflictsPath {
		return s.serveConflicts(ctx, w, method, ns, q.Get("print"))
	}
	path, err := ParseURLPath(r.URL.EscapedPath())
	if err != nil {
		return badRequest("%s", err.Error())
	}
	print := q.Get("print")
	switch print {
	case "", "pretty", "silent":
	default:
		return badRequest("Invalid print argument %q: want pretty or silent", print)
	}
	if f := q.Get("format"); f != "" && f != "export" {
		return badRequest("Invalid format argument %q: want export", f)
	}
	var ifMatch precondition
	if v := r.Header.Get("if-match"); v != "" {
		ifMatch = etagIs(v)
	}
	switch method {
	case http.MethodGet:
		if ifMatch != nil {
			return badRequest("if-match is only supported on PUT and DELETE")
		}
		qu, err := parseQuery(q)
		if err != nil {
			return badRequest("%s", err.Error())
		}
		var t any
		if q.Get("shallow") == "true" {
			if print == "pretty" || qu != nil {
				return badRequest("shallow cannot be combined with print=pretty or orderBy")
			}
			t, err = s.st.shallow(ctx, ns, path)
		} else {
			t, err = s.st.get(ctx, ns, path)
		}
		if err != nil {
			return err
		}
		if qu != nil {
			t = qu.apply(t)
		}
		if strings.EqualFold(r.Header.Get("X-Firebase-ETag"), "true") {
			w.Header().Set("ETag", etag(t))
		}
		return s.reply(w, print, t)
	case http.MethodPut, http.MethodDelete:
		var val any
		if method == http.MethodPut {
			if val, err = s.body(w, r, len(path)); err != nil {
				return err
			}
		}
		res, err := s.st.write(ctx, ns, []update{{path, val}}, ifMatch)
		if err != nil {
			return err
		}
		if err := s.mayShowResolved(ctx, ns, []update{{path, val}}); err != nil {
			return s.writtenUnseen(w, err)
		}
		if ifMatch != nil || strings.EqualFold(r.Header.Get("X-Firebase-ETag"), "true") {
			w.Header().Set("ETag", etag(res[0])) // the ETag of the value now there
		}
		return s.reply(w, print, res[0])
	case http.MethodPost:
		if ifMatch != nil {
			return badRequest("if-match is only supported on PUT and DELETE")
		}
		val, err := s.body(w, r, len(path)+1)
		if err != nil {
			return err
		}
		id := s.push.Next()
		if _, err := s.st.write(ctx, ns, []update{{append(path[:len(path):len(path)], id), val}}, nil); err != nil {
			return err
		}
		return s.reply(w, print, map[string]any{"name": leaf(`"` + id + `"`)})
	case http.MethodPatch:
		if ifMatch != nil {
			return badRequest("if-match is only supported on PUT and DELETE")
		}
		ups, keys, err := s.patchBody(w, r, path)
		if err != nil {
			return err
		}
		if len(ups) == 0 {
			return s.reply(w, print, nil)
		}
		res, err := s.st.write(ctx, ns, ups, nil)
		if err != nil {
			return err
		}
		if err := s.mayShowResolved(ctx, ns, ups); err != nil {
			return s.writtenUnseen(w, err)
		}
		out := map[string]any{}
		for i, k := range keys {
			if res[i] != nil {
				out[k] = res[i]
			}
		}
		return s.reply(w, print, out)
	}
	w.Header().Set("Allow", "GET, PUT, PATCH, POST, DELETE")
	return &httpError{http.StatusMethodNotAllowed, "Method not allowed: " + method}
}

// mayShowResolved says whether the answer to a write may carry the values it stored: nil, or
// ErrPermissionDenied when one of them holds an increment (its stored value is the old one plus
// n, so it tells the old one) at a path the caller may not read.
func (s *Server) mayShowResolved(ctx context.Context, ns string, ups []update) error {
	for _, u := range ups {
		if hasIncrement(u.val) {
			if err := s.st.readAllowedLazy(ctx, ns, u.path); err != nil {
				return err
			}
		}
	}
	return nil
}

// writtenUnseen answers a write that committed but whose stored values the caller may not
// read (mayShowResolved): 204 without a body or an ETag, as print=silent answers.
func (s *Server) writtenUnseen(w http.ResponseWriter, err error) error {
	if !errors.Is(err, ErrPermissionDenied) {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// hasIncrement says whether the value to write holds an increment server value.
func hasIncrement(v any) bool {
	switch x := v.(type) {
	case serverValue:
		return !x.timestamp
	case map[string]any:
		for _, e := range x {
			if hasIncrement(e) {
				return true
			}
		}
	}
	return false
}

func (s *Server) reply(w http.ResponseWriter, print string, t any) error {
	if print == "silent" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(encode(t, print == "pretty"))
	return nil
}

// readBody reads the request body within MaxBodyBytes and parses it as JSON.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, badRequest("Data too large: the body exceeds %d bytes", s.cfg.MaxBodyBytes)
		}
		return nil, badRequest("Reading the body: %v", err)
	}
	v, err := parseJSON(body)
	if err != nil {
		return nil, badRequest("%s", err.Error())
	}
	return v, nil
}

// body reads and normalizes a value to be written at the given depth.
func (s *Server) body(w http.ResponseWriter, r *http.Request, depth int) (any, error) {
	v, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	t, err := normalize(v, depth)
	if err != nil {
		return nil, badRequest("%s", err.Error())
	}
	return t, nil
}

// patchBody turns a PATCH body into updates: each key a child path (multi-path "a/b" allowed),
// none an ancestor of another.
func (s *Server) patchBody(w http.ResponseWriter, r *http.Request, base []string) ([]update, []string, error) {
	v, err := s.readBody(w, r)
	if err != nil {
		return nil, nil, err
	}
	return patchUpdates(base, v)
}

// patchUpdates turns a PATCH body (or a WebSocket merge's data) into updates of base's children.
func patchUpdates(base []string, v any) ([]update, []string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, badRequest("Invalid data; couldn't parse JSON object. PATCH needs an object of children to update.")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ups []update
	var outKeys []string
	joined := map[string]bool{}
	for _, k := range keys {
		rel, err := ParsePath(k)
		if err != nil {
			return nil, nil, badRequest("%s", err.Error())
		}
		if len(rel) == 0 {
			return nil, nil, badRequest("Invalid PATCH key %q: empty path", k)
		}
		p := append(append([]string(nil), base...), rel...)
		if len(p) > MaxDepth {
			return nil, nil, badRequest("Path is too deep: more than %d segments", MaxDepth)
		}
		t, err := normalize(obj[k], len(p))
		if err != nil {
			return nil, nil, badRequest("%s", err.Error())
		}
		j := strings.Join(rel, "/")
		if joined[j] {
			return nil, nil, badRequest("Invalid PATCH: path %q given twice", j)
		}
		joined[j] = true
		ups = append(ups, update{p, t})
		outKeys = append(outKeys, k)
	}
	for a := range joined { // sorted order would do, but the map is small
		for b := range joined {
			if a != b && strings.HasPrefix(b, a+"/") {
				return nil, nil, badRequest("Invalid PATCH: path %q is an ancestor of %q", a, b)
			}
		}
	}
	return ups, outKeys, nil
}
