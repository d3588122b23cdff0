package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// headerEcho is a running server a url function routes to; it records the Authorization header
// of the last request it got.
type headerEcho struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newHeaderEcho(t *testing.T) *headerEcho {
	e := &headerEcho{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		e.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *headerEcho) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auth...)
}

// authGateway serves fns with basic auth (admin / s3cret) on /system/.
func authGateway(t *testing.T, fns ...*gateway.Function) (*gateway.Gateway, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: fns, Tick: time.Hour,
		Auth: &gateway.Credentials{User: "admin", Password: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	return g, srv.URL
}

func do(t *testing.T, method, url, user, pass, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" || pass != "" {
		req.SetBasicAuth(user, pass)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// /system/ refuses every request without the right user and password with OpenFaaS' 401 and
// Basic challenge, unknown paths and the scale call included (which then changes nothing);
// with them it answers. /function/, /healthz and /metrics stay public.
func TestSystemNeedsBasicAuth(t *testing.T) {
	e := newHeaderEcho(t)
	g, url := authGateway(t, &gateway.Function{Name: "fn", URL: e.srv.URL})
	for _, c := range []struct {
		name, method, path, user, pass, body string
	}{
		{"no credentials", "GET", "/system/functions", "", "", ""},
		{"wrong password", "GET", "/system/functions", "admin", "s3cret!", ""},
		{"wrong user", "GET", "/system/functions", "root", "s3cret", ""},
		{"empty password", "GET", "/system/functions", "admin", "", ""},
		{"scale without credentials", "POST", "/system/scale-function/fn", "", "", `{"replicas": 0}`},
		{"unknown system path", "GET", "/system/secrets", "", "", ""},
		{"dot-dot into system", "GET", "/function/../system/functions", "", "", ""},
	} {
		code, h, body := do(t, c.method, url+c.path, c.user, c.pass, c.body)
		if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Basic realm="Restricted", charset="UTF-8"` {
			t.Errorf("%s: %s %s = %d (WWW-Authenticate %q), want 401 with a Basic challenge", c.name, c.method, c.path, code, h.Get("WWW-Authenticate"))
		}
		if strings.Contains(body, "fn") {
			t.Errorf("%s: the 401 body tells something: %q", c.name, body)
		}
	}
	if s := g.Status()[0]; s.Replicas != 1 {
		t.Errorf("an unauthenticated scale changed the replicas: %+v", s)
	}
	if code, _, body := do(t, "GET", url+"/system/functions", "admin", "s3cret", ""); code != http.StatusOK || !strings.Contains(body, `"name":"fn"`) {
		t.Errorf("with credentials: GET /system/functions = %d %q", code, body)
	}
	if code, _, body := do(t, "GET", url+"/system/secrets", "admin", "s3cret", ""); code != http.StatusNotFound {
		t.Errorf("with credentials, an unknown system path = %d %q, want 404", code, body)
	}
	for _, p := range []string{"/function/fn", "/healthz", "/metrics"} {
		if code, _, body := do(t, "GET", url+p, "", "", ""); code != http.StatusOK {
			t.Errorf("GET %s without credentials = %d %q, want 200 (public)", p, code, body)
		}
	}
	// The basic auth header of a /function/ call reaches a public function unchanged: it may be
	// the function's own scheme.
	do(t, "GET", url+"/function/fn", "fnuser", "fnpass", "")
	if seen := e.seen(); len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], "Basic ") {
		t.Errorf("a public function did not get the caller's Authorization: %q", seen)
	}
}

// Without Config.Auth (--basic-auth=false) the system API is open.
func TestSystemOpenWithoutAuth(t *testing.T) {
	e := newHeaderEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{{Name: "fn", URL: e.srv.URL}}, Tick: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	if code, _, body := do(t, "GET", srv.URL+"/system/functions", "", "", ""); code != http.StatusOK {
		t.Errorf("GET /system/functions without auth configured = %d %q, want 200", code, body)
	}
}

// A function with key_file needs "Authorization: Bearer KEY"; the gateway checks the key and
// does not pass it on to the function.
func TestFunctionKey(t *testing.T) {
	e := newHeaderEcho(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := newHeaderEcho(t)
	_, url := authGateway(t, &gateway.Function{Name: "locked", URL: e.srv.URL, KeyFile: keyFile},
		&gateway.Function{Name: "open", URL: open.srv.URL})
	for _, c := range []struct{ name, auth string }{
		{"no key", ""}, {"wrong key", "Bearer k3y2"}, {"basic, not bearer", "Basic azN5"}, {"no scheme", "k3y"},
		{"the gateway's basic auth", "Basic YWRtaW46czNjcmV0"},
	} {
		var h []string
		if c.auth != "" {
			h = []string{"Authorization", c.auth}
		}
		code, hdr, body := do(t, "POST", url+"/function/locked", "", "", "x", h...)
		if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: POST /function/locked = %d %q (WWW-Authenticate %q), want 401 with a Bearer challenge", c.name, code, body, hdr.Get("WWW-Authenticate"))
		}
	}
	if n := len(e.seen()); n != 0 {
		t.Fatalf("the function got %d requests without its key", n)
	}
	for _, scheme := range []string{"Bearer", "bearer"} {
		if code, _, body := do(t, "POST", url+"/function/locked", "", "", "x", "Authorization", scheme+" k3y"); code != http.StatusOK {
			t.Errorf("with the key (%s): %d %q, want 200", scheme, code, body)
		}
	}
	if seen := e.seen(); len(seen) != 2 || seen[0] != "" || seen[1] != "" {
		t.Errorf("the function saw Authorization %q: the key must stop at the gateway", seen)
	}
	if code, _, _ := do(t, "POST", url+"/function/open", "", "", "x"); code != http.StatusOK {
		t.Errorf("a function without key_file = %d, want 200 (public)", code)
	}
}

func TestFunctionKeyFileErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{empty, "is empty"}, {filepath.Join(t.TempDir(), "missing"), "no such file"},
	} {
		_, err := gateway.New(context.Background(), gateway.Config{Functions: []*gateway.Function{{Name: "f", URL: "http://127.0.0.1:1", KeyFile: c.file}}})
		if err == nil || !strings.Contains(err.Error(), "function f") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("key_file %s: err = %v, want one naming the function and %q", c.file, err, c.want)
		}
	}
}

// The first Load in an empty secrets directory generates a password and writes both files
// (0600, the directory 0700); later Loads read the same credentials and generate nothing.
func TestAuthFilesGenerateOnceThenReuse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "secrets")
	a := gateway.AuthFiles{SecretDir: dir}
	c1, gen, err := a.Load()
	if err != nil || !gen {
		t.Fatalf("first Load: %+v generated=%v err=%v, want generated credentials", c1, gen, err)
	}
	if c1.User != gateway.DefaultUser || len(c1.Password) < 32 {
		t.Errorf("generated %+v: want user %s and a long password", c1, gateway.DefaultUser)
	}
	for _, f := range []string{gateway.UserFileName, gateway.PasswordFileName} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v mode %v, want 0600", f, err, st.Mode().Perm())
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("secrets directory mode %v, want 0700", st.Mode().Perm())
	}
	c2, gen, err := a.Load()
	if err != nil || gen || c2 != c1 {
		t.Errorf("second Load: %+v generated=%v err=%v, want %+v read back", c2, gen, err, c1)
	}
	// Another directory gets another password.
	c3, _, _ := gateway.AuthFiles{SecretDir: t.TempDir()}.Load()
	if c3.Password == c1.Password {
		t.Error("two directories got the same generated password")
	}
	// Files named explicitly are read as they are.
	uf, pf := filepath.Join(t.TempDir(), "u"), filepath.Join(t.TempDir(), "p")
	_ = os.WriteFile(uf, []byte("ops\n"), 0o600)
	_ = os.WriteFile(pf, []byte("  pw  \n"), 0o600)
	if c, gen, err := (gateway.AuthFiles{UserFile: uf, PasswordFile: pf, SecretDir: dir}).Load(); err != nil || gen || c.User != "ops" || c.Password != "pw" {
		t.Errorf("explicit files: %+v generated=%v err=%v, want ops/pw", c, gen, err)
	}
}

func TestAuthFilesErrors(t *testing.T) {
	half := t.TempDir()
	_ = os.WriteFile(filepath.Join(half, gateway.UserFileName), []byte("admin"), 0o600)
	emptyPass := t.TempDir()
	_ = os.WriteFile(filepath.Join(emptyPass, gateway.UserFileName), []byte("admin"), 0o600)
	_ = os.WriteFile(filepath.Join(emptyPass, gateway.PasswordFileName), []byte("\n"), 0o600)
	colon := t.TempDir()
	_ = os.WriteFile(filepath.Join(colon, gateway.UserFileName), []byte("a:b"), 0o600)
	_ = os.WriteFile(filepath.Join(colon, gateway.PasswordFileName), []byte("pw"), 0o600)
	missing := filepath.Join(t.TempDir(), "nope")
	for _, c := range []struct {
		name string
		a    gateway.AuthFiles
		want string
	}{
		{"only the user file", gateway.AuthFiles{SecretDir: half}, "only one of basic-auth-user and basic-auth-password"},
		{"empty password", gateway.AuthFiles{SecretDir: emptyPass}, "is empty"},
		{"colon in user", gateway.AuthFiles{SecretDir: colon}, "may not contain ':'"},
		{"one explicit file", gateway.AuthFiles{UserFile: missing}, "give both"},
		{"explicit files missing", gateway.AuthFiles{UserFile: missing, PasswordFile: missing}, "no such file"},
	} {
		_, gen, err := c.a.Load()
		if err == nil || gen || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: generated=%v err=%v, want an error with %q", c.name, gen, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(half, gateway.PasswordFileName)); err == nil {
		t.Error("a password was generated beside a user file someone wrote")
	}
}
