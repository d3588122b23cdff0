// Package httpauth is the bearer-token check Continuum's control APIs share (the FL
// orchestrator's API, the proxy's admin endpoints): a token kept in a file, generated on the
// first start (160 random bits, hex, file 0600 in a 0700 directory) and reused after, compared
// in constant time, and the refusal to listen where other machines reach without one.
//
// It owns no server and no user model: a server wraps the handlers that need the token with
// Require and leaves its probes (/health) outside.
package httpauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// TokenBits is the entropy of a generated token.
const TokenBits = 160

// ReadToken reads a token file: its text, surrounding white space ignored. An empty file is an
// error (a token nobody can guess must not be "").
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty: want the token callers send as Authorization: Bearer TOKEN", path)
	}
	return tok, nil
}

// LoadOrCreateToken reads the token at path or, when there is no file, generates one and writes
// it (0600, the directory made 0700); generated says it did. O_EXCL: two servers started at once
// on one path cannot each write a token of their own; the second reads the first's.
func LoadOrCreateToken(path string) (token string, generated bool, err error) {
	tok, err := ReadToken(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	b := make([]byte, TokenBits/8)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	tok = hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		tok, err := ReadToken(path)
		return tok, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	_, werr := f.WriteString(tok + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, werr)
	}
	return tok, true, nil
}

// Equal compares two secrets in time independent of where they differ and of their lengths
// (subtle.ConstantTimeCompare returns at once on different lengths): both are hashed first.
func Equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// HasBearer reports whether r carries one of tokens as "Authorization: Bearer TOKEN" (the
// scheme in any case). Every token is compared, so the time taken does not tell which matched.
// An empty token never matches.
func HasBearer(r *http.Request, tokens ...string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got = strings.TrimSpace(got)
	match := false
	for _, t := range tokens {
		if Equal(got, t) && t != "" {
			match = true
		}
	}
	return match
}

// Require answers 401 with a Bearer challenge of realm and a JSON {"error": ...} naming what is
// needed, unless the request carries one of tokens; then it calls next.
func Require(realm string, next http.Handler, tokens ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HasBearer(r, tokens...) {
			Unauthorized(w, realm)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Unauthorized writes the 401 Require writes.
func Unauthorized(w http.ResponseWriter, realm string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": realm + " needs its token: send Authorization: Bearer TOKEN"})
}

// IsLoopback reports whether a listen address (host:port) only accepts connections from this
// machine: an IP literal in 127.0.0.0/8 or ::1, or "localhost". An empty host listens on every
// interface, and any other name may resolve to anything, so both count as reachable.
func IsLoopback(addr string) bool {
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

// CheckExposure refuses to serve what (a control API) on listen, an address other machines can
// reach, without a token; how says how to give one. Loopback needs none.
func CheckExposure(what, listen string, haveToken bool, how string) error {
	if haveToken || IsLoopback(listen) {
		return nil
	}
	return fmt.Errorf("%s: %q is reachable from other machines and would let anyone in: %s, or listen on loopback (127.0.0.1:PORT)", what, listen, how)
}
