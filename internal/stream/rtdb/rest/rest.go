package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// Config is what the REST protocol needs of the server.
type Config struct {
	KV       *clientv3.Client
	Store    *store.Store
	Verifier *auth.Verifier
	PushIDs  *tree.PushIDs
	Logger   *slog.Logger
	// DefaultNamespace is the database of requests without ?ns=.
	DefaultNamespace string
	MaxBodyBytes     int64         // bounds a write's body
	RequestTimeout   time.Duration // bounds one request's kv work
	KVEndpoints      []string      // named in errors about the kv
}

// Server answers the REST protocol; it is an http.Handler safe for concurrent use.
type Server struct {
	cfg  Config
	kv   *clientv3.Client
	st   *store.Store
	push *tree.PushIDs
	log  *slog.Logger
	auth *auth.Verifier
}

// New serves REST requests on cfg's store.
func New(cfg Config) *Server {
	return &Server{cfg: cfg, kv: cfg.KV, st: cfg.Store, push: cfg.PushIDs, log: cfg.Logger, auth: cfg.Verifier}
}

// ServeHTTP answers GET, PUT, PATCH, POST and DELETE on /<path>.json, and the admin paths
// /.settings/rules.json and /.conflicts.json.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	a, err := s.auth.Authenticate(r)
	if err != nil {
		auth.WriteError(w, err)
		return
	}
	ctx = auth.WithAuth(ctx, a)
	if r.URL.Path == settingsPath {
		err = s.serveSettings(ctx, w, r, method)
	} else {
		err = s.serve(ctx, w, r, method)
	}
	if err != nil {
		var he *httpError
		var ie *tree.InvalidError
		var pf store.PreconditionFailed
		switch {
		case errors.As(err, &he):
			WriteError(w, he.code, he.msg)
		case errors.As(err, &ie):
			WriteError(w, http.StatusBadRequest, ie.Msg)
		case errors.As(err, &pf):
			w.Header().Set("ETag", tree.ETag(pf.Current))
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusPreconditionFailed)
			w.Write(tree.Encode(pf.Current, false))
		case errors.Is(err, store.ErrTooLarge):
			WriteError(w, http.StatusBadRequest, err.Error())
		case errors.Is(err, auth.ErrPermissionDenied):
			auth.WriteError(w, err)
		case errors.Is(err, store.ErrBusy):
			WriteError(w, http.StatusServiceUnavailable, err.Error())
		default:
			s.log.Warn("request failed", "method", method, "path", r.URL.Path, "err", err)
			WriteError(w, http.StatusInternalServerError, "Internal error: "+err.Error())
		}
	}
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

// WriteError answers code with Firebase's error body {"error": msg}: REST's answers, and those
// of the streaming and WebSocket endpoints before their protocol starts.
func WriteError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Write(b)
}

func (s *Server) serve(ctx context.Context, w http.ResponseWriter, r *http.Request, method string) error {
	q := r.URL.Query()
	ns := q.Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !tree.ValidNamespace(ns) {
		return badRequest("Invalid namespace %q: lowercase letters, digits and '-' only", ns)
	}
	if r.URL.Path == ConflictsPath {
		return s.serveConflicts(ctx, w, method, ns, q.Get("print"))
	}
	path, err := tree.ParseURLPath(r.URL.EscapedPath())
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
	var ifMatch store.Precondition
	if v := r.Header.Get("if-match"); v != "" {
		ifMatch = store.ETagIs(v)
	}
	switch method {
	case http.MethodGet:
		if ifMatch != nil {
			return badRequest("if-match is only supported on PUT and DELETE")
		}
		qu, err := tree.ParseQuery(q)
		if err != nil {
			return badRequest("%s", err.Error())
		}
		var t any
		if q.Get("shallow") == "true" {
			if print == "pretty" || qu != nil {
				return badRequest("shallow cannot be combined with print=pretty or orderBy")
			}
			t, err = s.st.Shallow(ctx, ns, path)
		} else {
			t, err = s.st.Get(ctx, ns, path)
		}
		if err != nil {
			return err
		}
		if qu != nil {
			t = qu.Apply(t)
		}
		if strings.EqualFold(r.Header.Get("X-Firebase-ETag"), "true") {
			w.Header().Set("ETag", tree.ETag(t))
		}
		return s.reply(w, print, t)
	case http.MethodPut, http.MethodDelete:
		var val any
		if method == http.MethodPut {
			if val, err = s.body(w, r, len(path)); err != nil {
				return err
			}
		}
		res, err := s.st.Write(ctx, ns, []store.Update{{Path: path, Val: val}}, ifMatch)
		if err != nil {
			return err
		}
		if err := s.mayShowResolved(ctx, ns, []store.Update{{Path: path, Val: val}}); err != nil {
			return s.writtenUnseen(w, err)
		}
		if ifMatch != nil || strings.EqualFold(r.Header.Get("X-Firebase-ETag"), "true") {
			w.Header().Set("ETag", tree.ETag(res[0])) // the ETag of the value now there
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
		if _, err := s.st.Write(ctx, ns, []store.Update{{Path: append(path[:len(path):len(path)], id), Val: val}}, nil); err != nil {
			return err
		}
		return s.reply(w, print, map[string]any{"name": tree.Leaf(`"` + id + `"`)})
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
		res, err := s.st.Write(ctx, ns, ups, nil)
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
// auth.ErrPermissionDenied when one of them holds an increment (its stored value is the old one plus
// n, so it tells the old one) at a path the caller may not read.
func (s *Server) mayShowResolved(ctx context.Context, ns string, ups []store.Update) error {
	for _, u := range ups {
		if hasIncrement(u.Val) {
			if err := s.st.ReadAllowedLazy(ctx, ns, u.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// writtenUnseen answers a write that committed but whose stored values the caller may not
// read (mayShowResolved): 204 without a body or an ETag, as print=silent answers.
func (s *Server) writtenUnseen(w http.ResponseWriter, err error) error {
	if !errors.Is(err, auth.ErrPermissionDenied) {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// hasIncrement says whether the value to write holds an increment server value.
func hasIncrement(v any) bool {
	switch x := v.(type) {
	case tree.ServerValue:
		return x.Increment()
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
	w.Write(tree.Encode(t, print == "pretty"))
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
	v, err := tree.ParseJSON(body)
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
	t, err := tree.Normalize(v, depth)
	if err != nil {
		return nil, badRequest("%s", err.Error())
	}
	return t, nil
}

// patchBody turns a PATCH body into updates: each key a child path (multi-path "a/b" allowed),
// none an ancestor of another.
func (s *Server) patchBody(w http.ResponseWriter, r *http.Request, base []string) ([]store.Update, []string, error) {
	v, err := s.readBody(w, r)
	if err != nil {
		return nil, nil, err
	}
	return store.PatchUpdates(base, v)
}
