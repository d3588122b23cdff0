package authtoken

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The first Load generates a token into a 0600 file (its directory 0700), later ones read the
// same token, and concurrent first Loads agree on one token.
func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets", "token")
	toks := make([]string, 8)
	gens := make([]bool, 8)
	var wg sync.WaitGroup
	for i := range toks {
		wg.Go(func() {
			var err error
			toks[i], gens[i], err = Load(path)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := 0
	for i, tok := range toks {
		if tok != toks[0] || len(tok) != 40 {
			t.Errorf("Load %d: token %q, want one 40-hex token for all (%q)", i, tok, toks[0])
		}
		if gens[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d Loads say they generated the token, want 1", n)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v), want 0600", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v (%v), want 0700", st.Mode(), err)
	}
	again, gen, err := Load(path)
	if err != nil || gen || again != toks[0] {
		t.Errorf("second Load: %q generated %v err %v, want the same token", again, gen, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	if _, _, err := Load(empty); err == nil {
		t.Error("an empty token file was accepted")
	}
}

func TestHas(t *testing.T) {
	for _, c := range []struct {
		header string
		ok     bool
	}{
		{"Bearer s3cret", true}, {"bearer  s3cret ", true}, {"Bearer s3cre", false}, {"Bearer s3cret2", false},
		{"Basic s3cret", false}, {"s3cret", false}, {"", false}, {"Bearer ", false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if Has(r, "s3cret") != c.ok {
			t.Errorf("Authorization %q: %v, want %v", c.header, !c.ok, c.ok)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "127.9.9.9:1": true,
		":1": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "example:1": false, "bad": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}
