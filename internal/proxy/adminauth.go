package proxy

import (
	"fmt"
	"net/http"

	"github.com/continuum-project/continuum/internal/httpjson"

	"github.com/continuum-project/continuum/internal/httpauth"
)

// readAdminToken reads the admin token file ("" when none is configured), trusted only when
// nobody but its owner could have written it (httpauth.ReadToken).
func readAdminToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	tok, err := httpauth.ReadToken(path)
	if err != nil {
		return "", fmt.Errorf("admin_token_file: %w", err)
	}
	return tok, nil
}

// hasToken reports whether r carries token as its bearer token, in constant time.
func hasToken(r *http.Request, token string) bool { return httpauth.HasBearer(r, token) }

// requireToken answers 401 with a Bearer challenge unless the request has the token.
func requireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasToken(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="continuum-proxy admin"`)
			httpjson.Error(w, http.StatusUnauthorized, "this admin endpoint needs the proxy's admin token: Authorization: Bearer TOKEN")
			return
		}
		next.ServeHTTP(w, r)
	})
}
