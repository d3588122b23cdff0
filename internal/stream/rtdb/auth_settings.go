package rtdb

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/continuum-project/continuum/internal/stream/rtdb/rules"
)

// settingsPath is where an admin reads and replaces a database's rules, as on Firebase.
const settingsPath = "/.settings/rules.json"

// defaultRules is what GET answers for a database without rules: what the server then enforces.
const defaultRules = "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": true\n  }\n}\n"

// serveSettings answers GET and PUT /.settings/rules.json?ns=<db> for admins: GET the rules in
// force (the text as given), PUT a rules file to replace them (400 naming the line and column of
// an error), stored in kv so that every server on that kv enforces them from the next request.
func (s *Server) serveSettings(ctx context.Context, w http.ResponseWriter, r *http.Request, method string) error {
	if a := AuthFrom(ctx); a == nil || !a.Admin {
		return ErrPermissionDenied
	}
	ns := r.URL.Query().Get("ns")
	if ns == "" {
		ns = s.cfg.DefaultNamespace
	}
	if !validNamespace(ns) {
		return badRequest("Invalid namespace %q: lowercase letters, digits and '-' only", ns)
	}
	key := s.st.rules.settingsKey(ns)
	switch method {
	case http.MethodGet:
		resp, err := s.kv.Get(ctx, key)
		if err != nil {
			return err
		}
		src := []byte(defaultRules)
		switch {
		case len(resp.Kvs) > 0:
			src = resp.Kvs[0].Value
		case s.st.rules.file != nil:
			src = s.st.rules.file.Source()
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

// writeAuthError answers 401 with Firebase's body, as its REST API writes it:
// {"error" : "Permission denied"} for a rules denial, the token's problem for a bad credential.
func writeAuthError(w http.ResponseWriter, err error) {
	msg := ErrPermissionDenied.Error()
	var ae *AuthError
	if errors.As(err, &ae) {
		msg = ae.Msg
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	b, _ := json.Marshal(msg)
	io.WriteString(w, "{\n  \"error\" : "+string(b)+"\n}\n")
}
