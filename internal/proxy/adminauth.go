package proxy

import (
	"fmt"
	"net/http"

	"github.com/continuum-project/continuum/internal/httpauth"
)

// DefaultAdminListen is where the admin endpoints listen unless told: loopback only, so that
// /metrics and /debug/pools (every instance's address, attributes and errors) are not served to
// whoever can reach the node.
const DefaultAdminListen = "127.0.0.1:9090"

// checkAdminExposure refuses an admin listener other machines can reach without a token.
func checkAdminExposure(adminListen, tokenFile string) error {
	if adminListen == "-" || tokenFile != "" || httpauth.IsLoopback(adminListen) {
		return nil
	}
	return fmt.Errorf("admin_listen %q is reachable from other machines, and /metrics and /debug/pools would be open to them: "+
		"give admin_token_file (--admin-token-file), a file with a token callers send as \"Authorization: Bearer TOKEN\", "+
		"or listen on loopback (%s, the default)", adminListen, DefaultAdminListen)
}

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
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "this admin endpoint needs the proxy's admin token: Authorization: Bearer TOKEN"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
