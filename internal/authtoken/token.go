package authtoken

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

// Load reads the token in path (surrounding white space ignored), or, when path does not
// exist, generates one (160 random bits, hex), writes it there (0600; the directory made 0700)
// and returns it with generated true, so a restart finds the same token. O_EXCL: two servers
// started at once on one file cannot each write a token of their own; the second reads the
// first's.
func Load(path string) (token string, generated bool, err error) {
	if path == "" {
		return "", false, errors.New("token file: no path")
	}
	if tok, err := read(path); !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	tok := hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		tok, err := read(path)
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

// Read reads the token in path, which must exist: for a client of the server that wrote it.
func Read(path string) (string, error) { return read(path) }

func read(path string) (string, error) {
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

// Equal compares in time independent of where a and b differ and of their lengths
// (subtle.ConstantTimeCompare returns at once on different lengths, which would tell a caller
// the secret's length): both sides are hashed first.
func Equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// Has reports whether r carries token as its bearer token (Authorization: Bearer TOKEN).
func Has(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && Equal(strings.TrimSpace(got), token)
}

// Unauthorized answers 401 with a Bearer challenge of realm and a JSON {"error": msg}.
func Unauthorized(w http.ResponseWriter, realm, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	b, _ := jsonString(msg)
	fmt.Fprintf(w, "{\"error\":%s}\n", b)
}

// IsLoopback reports whether a listen address only accepts connections from this machine: an
// IP literal in 127.0.0.0/8 or ::1, or "localhost". An empty host listens on every interface,
// and any other name may resolve to anything, so both count as reachable from elsewhere.
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

// StateDir is where a server named name keeps its state (its generated token) when not told:
// /var/lib/continuum/<name> for root, else $XDG_STATE_HOME/continuum/<name>
// (~/.local/state/... when that is unset).
func StateDir(name string) string {
	if os.Geteuid() == 0 {
		return filepath.Join("/var/lib/continuum", name)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "continuum", name)
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "continuum", name)
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("continuum-%s-%d", name, os.Geteuid()))
}

func jsonString(s string) ([]byte, error) { return json.Marshal(s) }
