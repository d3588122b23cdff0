package sse

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// StreamConfig configures listeners: REST streaming (SSE) and the hub under it.
type StreamConfig struct {
	// KeepAlive is the interval of "keep-alive" events on an idle stream (default 30 s, as
	// Firebase sends them).
	KeepAlive time.Duration
	// WriteTimeout closes a stream whose client does not take one burst of events within it
	// (default 30 s), so a dead client cannot pin its goroutine.
	WriteTimeout time.Duration
	// ListenerBufferBytes bounds the events queued for one listener (default 4 MiB); past it the
	// queue becomes one full put of the current value.
	ListenerBufferBytes int
	// ReadAuth, when set, decides whether a stream's caller may read its path (nil: everyone
	// may, as there are no rules). The security rules fill it.
	ReadAuth ReadAuthorizer
}

// ReadAuthorizer says whether the caller of r may read path in database ns. An error answers
// 401 with the error's text, as a denied grant does with "Permission denied".
type ReadAuthorizer func(r *http.Request, ns string, path []string) (ReadGrant, error)

// ReadGrant is a read permission for one stream.
type ReadGrant struct {
	Allowed bool
	// Expires is when the caller's credential expires (zero: never); the stream then sends
	// "auth_revoked" and ends, and the client re-authenticates and listens again.
	Expires time.Time
	// Revoked, when not nil, is closed when the read is no longer allowed (the rules or the data
	// they depend on changed); the stream then sends "cancel" and ends.
	Revoked <-chan struct{}
	// Changed, when not nil, is closed when the permission may have changed (the rules were
	// replaced); the stream then calls Recheck, before it sends any event it has not sent, and
	// goes on under the new grant, or sends "cancel" (denied) or "auth_revoked" (a credential
	// no longer valid, an *AuthError) and ends. The security rules fill both
	// (Hub.RulesChanged): a change is seen before any event of a later revision.
	Changed <-chan struct{}
	Recheck func() (ReadGrant, error)
}

// DefaultStreamConfig is Firebase's keep-alive interval and a 4 MiB listener buffer.
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{KeepAlive: 30 * time.Second, WriteTimeout: 30 * time.Second, ListenerBufferBytes: 4 << 20}
}

// Validate checks the config.
func (c StreamConfig) Validate() error {
	if c.KeepAlive < 0 || c.WriteTimeout < 0 || c.ListenerBufferBytes < 0 {
		return errors.New("stream keep-alive, write timeout and listener buffer must be >= 0 (0: the default)")
	}
	return nil
}

// WithDefaults fills zero fields.
func (c StreamConfig) WithDefaults() StreamConfig {
	d := DefaultStreamConfig()
	if c.KeepAlive == 0 {
		c.KeepAlive = d.KeepAlive
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.ListenerBufferBytes == 0 {
		c.ListenerBufferBytes = d.ListenerBufferBytes
	}
	return c
}

// Config is what streaming needs of the server.
type Config struct {
	Hub      *hub.Hub
	Store    *store.Store
	Verifier *auth.Verifier
	Logger   *slog.Logger
	// DefaultNamespace is the database of requests without ?ns=.
	DefaultNamespace string
	RequestTimeout   time.Duration // bounds judging a stream's read by the rules
	Stream           StreamConfig  // zero fields take defaults
}

// Server streams values to listeners over SSE; it is an http.Handler safe for concurrent use.
type Server struct {
	cfg    Config
	hub    *hub.Hub
	st     *store.Store
	auth   *auth.Verifier
	log    *slog.Logger
	stream StreamConfig
}

// New serves streams from cfg.Hub, judged by the security rules unless cfg.Stream.ReadAuth
// says otherwise.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, hub: cfg.Hub, st: cfg.Store, auth: cfg.Verifier, log: cfg.Logger, stream: cfg.Stream.WithDefaults()}
	if s.stream.ReadAuth == nil { // the rules on SSE listeners (grant.go)
		s.stream.ReadAuth = s.streamGrant
	}
	return s
}

// WantsEventStream says whether r is a listener: a GET asking for text/event-stream (Firebase's
// REST streaming).
func WantsEventStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// ServeHTTP streams the value at the request's path: a put of the whole value at "/", then a
// put or patch per change, keep-alive when idle, and cancel or auth_revoked when the read
// permission ends. It returns when the client goes, the server shuts down or a write times out.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ns := q.Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !tree.ValidNamespace(ns) {
		rest.WriteError(w, http.StatusBadRequest, fmt.Sprintf("Invalid namespace %q: lowercase letters, digits and '-' only", ns))
		return
	}
	path, err := tree.ParseURLPath(r.URL.EscapedPath())
	if err != nil {
		rest.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	qu, err := hub.ParseQuery(q)
	if err != nil {
		rest.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if q.Get("shallow") == "true" {
		rest.WriteError(w, http.StatusBadRequest, "shallow is not supported when streaming (Accept: text/event-stream)")
		return
	}
	grant := ReadGrant{Allowed: true}
	if s.stream.ReadAuth != nil {
		if grant, err = s.stream.ReadAuth(r, ns, path); err != nil {
			auth.WriteError(w, err) // Firebase's 401 shape (package auth)
			return
		}
		if !grant.Allowed {
			auth.WriteError(w, auth.ErrPermissionDenied)
			return
		}
	}
	sub, err := s.hub.Subscribe(r.Context(), ns, path, qu)
	if err != nil {
		if errors.Is(err, hub.ErrClosed) {
			rest.WriteError(w, http.StatusServiceUnavailable, err.Error())
		} else {
			rest.WriteError(w, http.StatusInternalServerError, "Internal error: "+err.Error())
		}
		return
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Access-Control-Allow-Origin", "*")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	flush := func() bool {
		rc.SetWriteDeadline(time.Now().Add(s.stream.WriteTimeout))
		if bw.Flush() != nil || rc.Flush() != nil {
			return false
		}
		return true
	}
	if !flush() {
		return
	}

	ctx := r.Context()
	keepAlive := time.NewTicker(s.stream.KeepAlive)
	defer keepAlive.Stop()
	var expiry <-chan time.Time
	if !grant.Expires.IsZero() {
		t := time.NewTimer(time.Until(grant.Expires))
		defer t.Stop()
		expiry = t.C
	}
	// judged is false once the stream ended because the read is no longer allowed: it asks
	// grant.Recheck when grant.Changed is closed.
	judged := func() bool {
		select {
		case <-grant.Changed:
		default:
			return true
		}
		g, err := grant.Recheck()
		var ae *auth.AuthError
		switch {
		case errors.As(err, &ae):
			bw.WriteString("event: auth_revoked\ndata: \"credential is no longer valid\"\n\n")
		case err != nil:
			if !errors.Is(err, hub.ErrClosed) {
				s.log.Warn("stream: cannot judge the read again; ending it", "err", err)
			}
			return false // the client reconnects and is judged afresh
		case !g.Allowed:
			bw.WriteString("event: cancel\ndata: null\n\n")
		default:
			grant.Changed, grant.Recheck = g.Changed, g.Recheck
			return true
		}
		flush()
		return false
	}
	for {
		select {
		case <-sub.Ready():
			evs, err := sub.TryNext()
			if err != nil {
				return // the server is shutting down: the client reconnects
			}
			if len(evs) == 0 {
				continue
			}
			// Taken, then judged: a rules change before these events' revisions has closed
			// Changed once the hub reached them (it closes it before queueing later
			// revisions); the first put may be of a revision read before the hub reached it.
			if grant.Changed != nil {
				if err := s.hub.WaitApplied(ctx, hub.MaxRev(evs)); err != nil {
					return
				}
			}
			if !judged() {
				return
			}
			for _, ev := range evs {
				bw.Write(ev.SSE())
			}
			if !flush() {
				return
			}
			keepAlive.Reset(s.stream.KeepAlive)
		case <-keepAlive.C:
			bw.WriteString("event: keep-alive\ndata: null\n\n")
			if !flush() {
				return
			}
		case <-expiry:
			bw.WriteString("event: auth_revoked\ndata: \"credential is no longer valid\"\n\n")
			flush()
			return
		case <-grant.Changed:
			if !judged() {
				return
			}
		case <-grant.Revoked:
			bw.WriteString("event: cancel\ndata: null\n\n")
			flush()
			return
		case <-ctx.Done():
			return
		}
	}
}
