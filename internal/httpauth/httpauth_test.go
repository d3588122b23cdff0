package httpauth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOrCreateTokenGeneratesOnceThenReuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets", "token")
	tok, gen, err := LoadOrCreateToken(path)
	if err != nil || !gen || len(tok) != TokenBits/4 {
		t.Fatalf("first: %q %v %v, want a generated %d-hex-digit token", tok, gen, err, TokenBits/4)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v, want 0600", st.Mode(), err)
	}
	if d, _ := os.Stat(filepath.Dir(path)); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", d.Mode())
	}
	again, gen, err := LoadOrCreateToken(path)
	if err != nil || gen || again != tok {
		t.Fatalf("second: %q %v %v, want the same token, not generated", again, gen, err)
	}
	if err := os.WriteFile(path, []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateToken(path); err == nil {
		t.Error("an empty token file was accepted")
	}
}

func TestRequire(t *testing.T) {
	calls := 0
	h := Require("test api", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls++ }), "s3cret", "other")
	for _, c := range []struct {
		auth string
		ok   bool
	}{
		{"", false}, {"Bearer", false}, {"Bearer ", false}, {"Bearer s3cret!", false}, {"Basic s3cret", false},
		{"s3cret", false}, {"Bearer S3CRET", false}, {"Bearer s3cret", true}, {"bearer  s3cret ", true}, {"Bearer other", true},
	} {
		r := httptest.NewRequest("POST", "/x", nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		before := calls
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := calls > before; got != c.ok {
			t.Errorf("Authorization %q: passed %v, want %v", c.auth, got, c.ok)
		}
		if !c.ok && (w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != `Bearer realm="test api"`) {
			t.Errorf("Authorization %q: %d %q, want 401 with a Bearer challenge", c.auth, w.Code, w.Header().Get("WWW-Authenticate"))
		}
	}
	// An empty token never matches, even an empty bearer.
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer ")
	if HasBearer(r, "") {
		t.Error("an empty token matched")
	}
}

func TestCheckExposure(t *testing.T) {
	for _, c := range []struct {
		listen string
		token  bool
		ok     bool
	}{
		{"127.0.0.1:1", false, true}, {"[::1]:1", false, true}, {"localhost:1", false, true},
		{":1", false, false}, {"0.0.0.0:1", false, false}, {"10.0.0.1:1", false, false}, {"example.org:1", false, false},
		{"0.0.0.0:1", true, true}, {"garbage", false, false},
	} {
		err := CheckExposure("api", c.listen, c.token, "give a token")
		if (err == nil) != c.ok {
			t.Errorf("CheckExposure(%q, token %v) = %v, want ok %v", c.listen, c.token, err, c.ok)
		}
	}
}

// FuzzHasBearer: no Authorization header but the exact token (after "Bearer ", white space
// trimmed) passes.
func FuzzHasBearer(f *testing.F) {
	for _, s := range []string{"Bearer tok", "Bearer tok ", "bearer tok", "Bearer tokk", "Basic tok", "tok", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, auth string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{auth}
		got := HasBearer(r, "tok")
		scheme, rest, ok := cutSpace(auth)
		want := ok && (scheme == "Bearer" || scheme == "bearer" || len(scheme) == 6 && equalFoldASCII(scheme, "bearer")) && trim(rest) == "tok"
		if got != want {
			t.Fatalf("HasBearer(%q) = %v, want %v", auth, got, want)
		}
	})
}

func cutSpace(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y || x < 'a' || x > 'z' {
			return false
		}
	}
	return true
}

func trim(s string) string {
	// strings.TrimSpace's set: ASCII and Unicode white space.
	return stringsTrimSpace(s)
}

var stringsTrimSpace = strings.TrimSpace
