package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// sharedUpstream is one server behind two url functions with base paths (/pub-base and
// /private), resolving dot segments itself as nginx and many frameworks do: what the gateway
// forwards is what such a server routes by. It records which of its two functions got requests.
type sharedUpstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]string // "pub" or "private" -> escaped paths received
}

func newSharedUpstream(t *testing.T) *sharedUpstream {
	u := &sharedUpstream{got: map[string][]string{}}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clean := path.Clean(r.URL.Path)
		var fn string
		switch {
		case clean == "/private" || strings.HasPrefix(clean, "/private/"):
			fn = "private"
		case clean == "/pub-base" || strings.HasPrefix(clean, "/pub-base/"):
			fn = "pub"
		default:
			http.NotFound(w, r)
			return
		}
		u.mu.Lock()
		u.got[fn] = append(u.got[fn], r.URL.EscapedPath())
		u.mu.Unlock()
		_, _ = w.Write([]byte(fn + " answered"))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *sharedUpstream) seen(fn string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got[fn]...)
}

// rawGet sends path exactly as written (no client-side cleaning or re-escaping).
func rawGet(t *testing.T, base, rawPath string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", base, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = rawPath
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestEncodedDotSegmentsCannotReachAnotherFunction: a path whose encoded slashes and dots climb
// out of the public function's base path is refused with 400 and reaches nothing, so a
// key-protected function on the same upstream server stays behind its key (issue 41, defect 8:
// /function/pub%2F..%2F..%2Fprivate%2Fx was forwarded as /pub-base/../../private/x).
func TestEncodedDotSegmentsCannotReachAnotherFunction(t *testing.T) {
	up := newSharedUpstream(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := authGateway(t,
		&gateway.Function{Name: "pub", URL: up.srv.URL + "/pub-base"},
		&gateway.Function{Name: "private", URL: up.srv.URL + "/private", KeyFile: keyFile})

	// The set-up is real: private needs its key, pub does not.
	if code, body := rawGet(t, url, "/function/private/x"); code != http.StatusUnauthorized {
		t.Fatalf("private without its key: %d %q, want 401", code, body)
	}
	if code, body := rawGet(t, url, "/function/private/x", "Authorization", "Bearer k3y"); code != http.StatusOK || body != "private answered" {
		t.Fatalf("private with its key: %d %q", code, body)
	}
	// An encoded slash after the name makes it no function's name (404); a dot segment after it
	// is refused (400).
	for _, p := range []string{"/function/pub%2F..%2F..%2Fprivate%2Fx", "/function/pub%2F..%2F..%2Fprivate"} {
		if code, body := rawGet(t, url, p); code != http.StatusNotFound || !strings.Contains(body, "no function") {
			t.Errorf("GET %s = %d %q, want 404: the escaped name pub%%2F... is no function's", p, code, body)
		}
	}
	for _, p := range []string{
		"/function/pub/..%2F..%2Fprivate%2Fx",
		"/function/pub/%2e%2e/%2e%2e/private/x",
		"/function/pub/%2E%2E%2F%2E%2E%2Fprivate%2Fx",
		"/function/pub/a/..%2F..%2F..%2Fprivate",
		"/function/pub/.%2F..%2F..%2Fprivate",
		"/function/pub/..%5C..%5Cprivate%5Cx",
		"/function/pub/%2e",
		"/function/pub/..;/..;/private",
		// What some server reads as "..": C servers stop at NUL, some drop white space and
		// controls, old decoders take overlong UTF-8 for '.', NFKC maps look-alike dots to '.',
		// a server that decodes twice sees %2e.
		"/function/pub/..%00/..%00/private/x",
		"/function/pub/.%00./..%20/private",
		"/function/pub/..%09/..%0d%0a/private",
		"/function/pub/%c0%ae%c0%ae/%c0%ae%c0%ae/private",
		"/function/pub/%e0%80%ae%e0%80%ae/private",
		"/function/pub/%e2%80%a4%e2%80%a4/private",
		"/function/pub/%e2%80%a5/private",
		"/function/pub/%ef%bc%8e%ef%bc%8e/private",
		"/function/pub/%252e%252e/%252E%252E/private",
	} {
		code, body := rawGet(t, url, p)
		if code != http.StatusBadRequest || !strings.Contains(body, "dot segments") {
			t.Errorf("GET %s = %d %q, want 400 (a dot segment would climb out of pub's base path)", p, code, body)
		}
	}
	// Unencoded, net/http's ServeMux redirects to the cleaned path (here /private/x, no route).
	if code, body := rawGet(t, url, "/function/pub/../../private/x"); code != http.StatusTemporaryRedirect && code != http.StatusMovedPermanently {
		t.Errorf("GET /function/pub/../../private/x = %d %q, want ServeMux's redirect to the cleaned path", code, body)
	}
	if got := up.seen("private"); len(got) != 1 {
		t.Fatalf("the key-protected function got %d requests (%q), want only the one with its key", len(got), got)
	}
	// What stays inside pub is forwarded as the client wrote it: an encoded slash stays encoded,
	// so the instance sees exactly the path the gateway routed.
	for _, c := range []struct{ in, want string }{
		{"/function/pub/a%2Fb", "/pub-base/a%2Fb"},
		{"/function/pub/x..y/.hidden", "/pub-base/x..y/.hidden"},
		{"/function/pub/a%00b/..x/%e2%80%a4b", "/pub-base/a%00b/..x/%e2%80%a4b"},
		{"/function/pub/sp%20ace", "/pub-base/sp%20ace"},
	} {
		if code, body := rawGet(t, url, c.in); code != http.StatusOK || body != "pub answered" {
			t.Errorf("GET %s = %d %q, want pub's 200", c.in, code, body)
			continue
		}
		got := up.seen("pub")
		if last := got[len(got)-1]; last != c.want {
			t.Errorf("GET %s reached the instance as %q, want %q", c.in, last, c.want)
		}
	}
	// An encoded slash in the name does not name a function: 404, as no function has a '/'.
	if code, body := rawGet(t, url, "/function/pub%2Fx"); code != http.StatusNotFound {
		t.Errorf("GET /function/pub%%2Fx = %d %q, want 404", code, body)
	}
}

// FuzzFunctionPathStaysInside: whatever path a request without the key names, the key-protected
// function on the shared upstream gets nothing, and what reaches the public function resolves
// (dot segments and all, split at '/' and '\') inside its base path.
func FuzzFunctionPathStaysInside(f *testing.F) {
	for _, s := range []string{"/function/pub%2F..%2F..%2Fprivate%2Fx", "/function/pub/%2e%2e/private",
		"/function/pub/..;/private", "/function/pub/a%2Fb", "/function/private/x", "/function/pub/..%5Cprivate"} {
		f.Add(s)
	}
	up := &sharedUpstream{got: map[string][]string{}}
	var outside []string
	var mu sync.Mutex
	up.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Resolve as a lenient server would: backslashes as slashes, ";params" dropped.
		p := strings.ReplaceAll(r.URL.Path, `\`, "/")
		var segs []string
		for _, s := range strings.Split(p, "/") {
			s, _, _ = strings.Cut(s, ";")
			segs = append(segs, s)
		}
		clean := path.Clean("/" + strings.Join(segs, "/"))
		if clean != "/pub-base" && !strings.HasPrefix(clean, "/pub-base/") {
			mu.Lock()
			outside = append(outside, r.URL.EscapedPath())
			mu.Unlock()
		}
		_, _ = w.Write([]byte("ok"))
	}))
	f.Cleanup(up.srv.Close)
	keyFile := filepath.Join(f.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("k3y\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	g, err := gateway.New(context.Background(), gateway.Config{Tick: time.Hour, Functions: []*gateway.Function{
		{Name: "pub", URL: up.srv.URL + "/pub-base"},
		{Name: "private", URL: up.srv.URL + "/private", KeyFile: keyFile}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(g.Close)
	h := g.Handler()
	f.Fuzz(func(t *testing.T, p string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + p + " HTTP/1.1\r\nHost: x\r\n\r\n")))
		if err != nil {
			return // the server would have answered 400 itself
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		mu.Lock()
		defer mu.Unlock()
		if len(outside) > 0 {
			t.Fatalf("GET %q without the key reached %q on the upstream (answer %d)", p, outside, rec.Code)
		}
	})
}
