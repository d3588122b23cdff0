// Package httpauth is the bearer-token check Continuum's control APIs share (the FL
// orchestrator's API, the proxy's admin endpoints): a token kept in a file, generated on the
// first start (160 random bits, hex, file 0600 in a 0700 directory) and reused after, trusted
// only when nobody but its owner could have written it, compared
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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// TokenBits is the entropy of a generated token.
const TokenBits = 160

// ReadToken reads a token file: its text, surrounding white space ignored. An empty file is an
// error (a token nobody can guess must not be ""), and so is a file others could have written
// (see ReadSecret).
func ReadToken(path string) (string, error) {
	tok, err := ReadSecret("token file", path)
	if err == nil && tok == "" {
		err = fmt.Errorf("token file %s is empty: want the token callers send as Authorization: Bearer TOKEN", path)
	}
	return tok, err
}

// ReadSecret reads a secret kept in a file (what names it in errors: "token file", "key_file"):
// its text, surrounding white space ignored, possibly "" (the caller says what an empty one
// should hold). Like ssh's StrictModes, it trusts only a file that nobody but its owner could
// have written: the file that is opened (symbolic links followed, so a Kubernetes Secret
// mounted as token -> ..data/token works) must be a regular file, owned by this process's
// effective user or root, and not writable by group or others (0600, 0400, 0440 or 0644 are
// fine; 0664 or 0666 are refused). The checks are made on the opened file (fstat), so the file
// cannot be swapped between the check and the read.
func ReadSecret(what, path string) (string, error) {
	// O_NONBLOCK: a FIFO planted at path must not block the open; it is then refused as not a
	// regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	if err := checkOwnerOnly(what, path, f); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// checkOwnerOnly refuses an opened secret file that is not a regular file, is writable by group
// or others, or belongs to someone other than this process's effective user or root.
func checkOwnerOnly(what, path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s is not a regular file (%v): want a file only its owner can write", what, path, fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s %s has mode %#o: group or others can write it and so choose the secret; want no group/other write (chmod 600 %s)", what, path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); int(st.Uid) != euid && st.Uid != 0 {
			return fmt.Errorf("%s %s is owned by uid %d: want a file owned by this user (uid %d) or root", what, path, st.Uid, euid)
		}
	}
	return nil
}

// LoadOrCreateToken reads the token at path or, when there is no file, generates one and writes
// it (0600; a missing directory is made 0700, and an existing one that group or others can
// write is refused, as someone else could replace the file in it). Two servers started at once
// on one path cannot each keep a token of their own, and neither ever reads a half-written
// file: the token is written and synced to a temporary file in the same directory, then linked
// to path (link(2) fails if path exists: the one that lost reads the winner's).
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
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return "", false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(tok + "\n")
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		tok, err := ReadToken(path)
		return tok, false, err
	} else if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	return tok, true, nil
}

// checkDir refuses a directory to generate a token in that group or others can write (and so
// rename another file over the token), or that belongs to someone other than this user or root.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("token directory %s has mode %#o: group or others can write it and replace the token; want a directory only its owner can write (chmod 700 %s), or a token path elsewhere", dir, perm, dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); int(st.Uid) != euid && st.Uid != 0 {
			return fmt.Errorf("token directory %s is owned by uid %d: want one owned by this user (uid %d) or root", dir, st.Uid, euid)
		}
	}
	return nil
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
	httpjson.Error(w, http.StatusUnauthorized, realm+" needs its token: send Authorization: Bearer TOKEN")
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
