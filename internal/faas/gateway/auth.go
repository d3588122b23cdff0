package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/continuum-project/continuum/internal/httpauth"
)

// The OpenFaaS convention for the gateway's credentials: two files in a secrets directory
// (its secret_mount_path), each holding one value, surrounding white space ignored.
const (
	UserFileName     = "basic-auth-user"
	PasswordFileName = "basic-auth-password"
	// DefaultUser is the user a generated password is for (OpenFaaS' installers use admin).
	DefaultUser = "admin"
	// Realm is the realm of the gateway's WWW-Authenticate challenge (OpenFaaS').
	Realm = "Restricted"
)

// Credentials are the user and password /system/* requires.
type Credentials struct {
	User, Password string
}

// AuthFiles says where a gateway's credentials are. UserFile and PasswordFile, when given,
// must exist; otherwise SecretDir holds basic-auth-user and basic-auth-password, and if
// neither is there a password is generated for DefaultUser and both files are written (0600,
// the directory 0700), so that a restart finds the same credentials.
type AuthFiles struct {
	UserFile, PasswordFile string
	SecretDir              string
}

// Load reads the credentials, generating them first when the secret directory has none;
// generated says it did (the caller prints the password once, then never again).
func (a AuthFiles) Load() (c Credentials, generated bool, err error) {
	if (a.UserFile == "") != (a.PasswordFile == "") {
		return c, false, errors.New("basic auth: give both --basic-auth-user-file and --basic-auth-password-file, or neither (then the secret directory's basic-auth-user and basic-auth-password)")
	}
	if a.UserFile != "" {
		c, err = readCredentials(a.UserFile, a.PasswordFile)
		return c, false, err
	}
	if a.SecretDir == "" {
		return c, false, errors.New("basic auth: no secret directory and no credential files")
	}
	uf, pf := filepath.Join(a.SecretDir, UserFileName), filepath.Join(a.SecretDir, PasswordFileName)
	_, uerr := os.Stat(uf)
	_, perr := os.Stat(pf)
	switch {
	case uerr == nil && perr == nil:
		c, err = readCredentials(uf, pf)
		return c, false, err
	case errors.Is(uerr, fs.ErrNotExist) && errors.Is(perr, fs.ErrNotExist):
		c, err = generateCredentials(a.SecretDir)
		return c, err == nil, err
	case uerr != nil && !errors.Is(uerr, fs.ErrNotExist):
		return c, false, fmt.Errorf("basic auth: %w", uerr)
	case perr != nil && !errors.Is(perr, fs.ErrNotExist):
		return c, false, fmt.Errorf("basic auth: %w", perr)
	}
	// One of the two is there: generating the other would pair a new password with a user (or
	// a user with a password) someone chose, so say what is missing instead.
	return c, false, fmt.Errorf("basic auth: %s has only one of %s and %s: write the missing one, or remove both to have a password generated",
		a.SecretDir, UserFileName, PasswordFileName)
}

// readCredentials reads the user and password files, each trusted only when nobody but its
// owner could have written it (httpauth.ReadSecret).
func readCredentials(userFile, passFile string) (Credentials, error) {
	u, err := httpauth.ReadSecret("basic auth user file", userFile)
	if err != nil {
		return Credentials{}, err
	}
	p, err := httpauth.ReadSecret("basic auth password file", passFile)
	if err != nil {
		return Credentials{}, err
	}
	c := Credentials{User: u, Password: p}
	switch {
	case c.User == "":
		return c, fmt.Errorf("basic auth user file %s is empty: want the user's name", userFile)
	case strings.Contains(c.User, ":"):
		return c, fmt.Errorf("basic auth user file %s: the user may not contain ':' (basic auth separates user and password with it)", userFile)
	case c.Password == "":
		return c, fmt.Errorf("basic auth password file %s is empty: want the password", passFile)
	}
	return c, nil
}

// generateCredentials writes DefaultUser and a random password (160 bits, hex) into dir.
// O_EXCL: two gateways started at once on one directory cannot each write a password of their
// own and leave the other's clients locked out; the second fails and says so.
func generateCredentials(dir string) (Credentials, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return Credentials{}, err
	}
	c := Credentials{User: DefaultUser, Password: hex.EncodeToString(b)}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return c, fmt.Errorf("basic auth: %w", err)
	}
	for _, f := range []struct{ name, value string }{{UserFileName, c.User}, {PasswordFileName, c.Password}} {
		path := filepath.Join(dir, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return c, fmt.Errorf("basic auth: write generated credentials: %w", err)
		}
		_, werr := fh.WriteString(f.value + "\n")
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return c, fmt.Errorf("basic auth: write %s: %w", path, werr)
		}
	}
	return c, nil
}

// equalSecret compares in time independent of where a and b differ and of their lengths
// (subtle.ConstantTimeCompare returns at once on different lengths, which would tell a
// caller the password's length): both sides are hashed first.
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// requireBasicAuth answers 401 with a Basic challenge unless the request carries c. The user
// and the password are both compared, always, so that a wrong user takes as long as a wrong
// password.
func requireBasicAuth(c *Credentials, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		userOK := equalSecret(user, c.User)
		passOK := equalSecret(pass, c.Password)
		if !ok || !userOK || !passOK {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+Realm+`", charset="UTF-8"`)
			http.Error(w, "invalid credentials: /system/ needs the gateway's basic auth user and password", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readKey reads a function's key file (Function.KeyFile), trusted only when nobody but its
// owner could have written it (httpauth.ReadSecret).
func readKey(path string) (string, error) {
	k, err := httpauth.ReadSecret("key_file", path)
	if err != nil {
		return "", err
	}
	if k == "" {
		return "", fmt.Errorf("key_file %s is empty: want the key callers send as Authorization: Bearer KEY", path)
	}
	return k, nil
}

// checkKey reports whether r carries the function's key as a bearer token.
func checkKey(r *http.Request, key string) bool {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	return ok && strings.EqualFold(scheme, "Bearer") && equalSecret(strings.TrimSpace(token), key)
}

// DefaultDataDir is where a gateway keeps its state (its generated credentials, under
// secrets/) when not told: /var/lib/continuum/faas-gateway for root, else
// $XDG_STATE_HOME/continuum/faas-gateway (~/.local/state/... when that is unset).
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/continuum/faas-gateway"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "continuum", "faas-gateway")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "continuum", "faas-gateway")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("continuum-faas-gateway-%d", os.Geteuid()))
}

// SecretDir is the secrets directory under a data directory.
func SecretDir(dataDir string) string { return filepath.Join(dataDir, "secrets") }
