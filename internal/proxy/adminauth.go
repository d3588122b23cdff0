package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// DefaultAdminListen is where the admin endpoints listen unless told: loopback only, so that
// /metrics and /debug/pools (every instance's address, attributes and errors) are not served to
// whoever can reach the node.
const DefaultAdminListen = "127.0.0.1:9090"

// isLoopback reports whether a listen address only accepts connections from this machine: an
// IP literal in 127.0.0.0/8 or ::1, or "localhost". An empty host listens on every interface,
// and any other name may resolve to anything, so both count as reachable from elsewhere.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAdminExposure refuses an admin listener other machines can reach without a token.
func checkAdminExposure(adminListen, tokenFile string) error {
	if adminListen == "-" || tokenFile != "" || isLoopback(adminListen) {
		return nil
	}
	return fmt.Errorf("admin_listen %q is reachable from other machines, and /metrics and /debug/pools would be open to them: "+
		"give admin_token_file (--admin-token-file), a file with a token callers send as \"Authorization: Bearer TOKEN\", "+
		"or listen on loopback (%s, the default)", adminListen, DefaultAdminListen)
}

// readAdminToken reads the admin token file ("" when none is configured).
func readAdminToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("admin_token_file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("admin_token_file %s is empty: want the token callers send as Authorization: Bearer TOKEN", path)
	}
	return tok, nil
}

// hasToken reports whether r carries token as its bearer token, comparing digests so that the
// time taken does not depend on where or whether the lengths differ.
func hasToken(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	a, b := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

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
