package rest

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rules"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// settingsPath is where an admin reads and replaces a database's rules, as on Firebase.
const settingsPath = "/.settings/rules.json"

// DefaultRules is what GET answers for a database without rules: what the server then enforces.
const DefaultRules = "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": true\n  }\n}\n"

// serveSettings answers GET and PUT /.settings/rules.json?ns=<db> for admins: GET the rules in
// force (the text as given), PUT a rules file to replace them (400 naming the line and column of
// an error), stored in kv so that every server on that kv enforces them from the next request.
func (s *Server) serveSettings(ctx context.Context, w http.ResponseWriter, r *http.Request, method string) error {
	if a := auth.AuthFrom(ctx); a == nil || !a.Admin {
		return auth.ErrPermissionDenied
	}
	ns := r.URL.Query().Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !tree.ValidNamespace(ns) {
		return badRequest("Invalid namespace %q: lowercase letters, digits and '-' only", ns)
	}
	key := s.st.SettingsKey(ns)
	switch method {
	case http.MethodGet:
		resp, err := s.kv.Get(ctx, key)
		if err != nil {
			return err
		}
		src := []byte(DefaultRules)
		switch {
		case len(resp.Kvs) > 0:
			src = resp.Kvs[0].Value
		case s.st.RulesFile() != nil:
			src = s.st.RulesFile().Source()
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(src)
		return nil
	case http.MethodPut:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				return badRequest("Rules too large: the body exceeds %d bytes", s.cfg.MaxBodyBytes)
			}
			return badRequest("Reading the body: %v", err)
		}
		if _, err := rules.Parse(body); err != nil {
			return badRequest("Invalid rules: %v", err)
		}
		if _, err := s.kv.Put(ctx, key, string(body)); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, "{\"status\":\"ok\"}")
		return nil
	}
	w.Header().Set("Allow", "GET, PUT")
	return &httpError{http.StatusMethodNotAllowed, "Method not allowed on " + settingsPath + ": " + method}
}
