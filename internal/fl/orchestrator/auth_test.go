package orchestrator

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// newAPIOrchestrator is an orchestrator whose API is served but which never runs a job here.
func newAPIOrchestrator(t testing.TB, token string) *Orchestrator {
	dir := t.TempDir()
	o, err := New(Config{Runner: &LocalRunner{LogDir: dir}, Members: CSVMembers(filepath.Join(dir, "none.csv"), nil, ""),
		Out: filepath.Join(dir, "out"), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

type apiCall struct{ method, path, body string }

// every route that changes or reveals something (GET /health aside).
var guardedCalls = []apiCall{
	{"POST", "/jobs", `{"rounds": 1}`},
	{"GET", "/jobs/current", ""},
	{"POST", "/jobs/current/stop", `{"reason":"x"}`},
	{"POST", "/report", `{"id":"n1","role":"client","event":"round","round":1}`},
	{"PUT", "/model?round=1", "model"},
	{"GET", "/model/latest", ""},
	{"POST", "/nodes/n1/leave", ""},
	{"POST", "/nodes/n1/join", ""},
	{"PUT", "/nodes/excluded", `["n1"]`},
	{"GET", "/nodes/unknown", ""},
}

// TestAPINeedsToken: without the token, with a wrong one, or with a token of another kind, every
// route but /health answers 401 with a Bearer challenge and changes nothing: no job starts, no
// node is excluded, no model is stored. A service token opens only the services' routes
// (report; model upload and download for the global aggregator's alone, 403 for the others);
// the API token opens all (issue 41: the orchestrator's API took anyone's word).
func TestAPINeedsToken(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	srv := httptest.NewServer(o.Handler())
	defer srv.Close()
	send := func(c apiCall, auth string) (int, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	for _, auth := range []string{"", "Bearer", "Bearer api-t0ken!", "Basic api-t0ken", "api-t0ken", "Bearer " + o.ControlToken("n1"),
		"Bearer " + strings.Replace(o.ServiceToken("client", "n1"), ".client.n1", ".client.n2", 1)} {
		for _, c := range guardedCalls {
			if code, h := send(c, auth); code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with Authorization %q = %d, want 401 with a Bearer challenge", c.method, c.path, auth, code)
			}
		}
	}
	// A service token: only what that service does.
	for _, c := range guardedCalls {
		for _, role := range []string{"client", "global"} {
			code, _ := send(c, "Bearer "+o.ServiceToken(role, "n1"))
			want := http.StatusUnauthorized
			switch {
			case c.path == "/report" && role == "client":
				want = http.StatusNoContent
			case c.path == "/report":
				want = http.StatusForbidden // the report says no role, so it is not the global's
			case strings.HasPrefix(c.path, "/model") && role == "client":
				want = http.StatusForbidden
			case strings.HasPrefix(c.path, "/model"):
				want = map[string]int{"PUT": http.StatusNoContent, "GET": http.StatusOK}[c.method]
			}
			if code != want {
				t.Errorf("%s %s with %s n1's token = %d, want %d", c.method, c.path, role, code, want)
			}
		}
	}
	if _, ok := o.Current(); ok {
		t.Error("a job was submitted without the API token")
	}
	if ex := o.Excluded(); len(ex) != 0 {
		t.Errorf("nodes excluded without the API token: %v", ex)
	}
	if code, _ := send(apiCall{"GET", "/health", ""}, ""); code != http.StatusOK {
		t.Errorf("GET /health without a token = %d, want 200 (probes)", code)
	}
	// The API token opens the rest.
	if code, _ := send(apiCall{"PUT", "/nodes/excluded", `["n2"]`}, "Bearer api-t0ken"); code != http.StatusOK || len(o.Excluded()) != 1 {
		t.Errorf("PUT /nodes/excluded with the token = %d, excluded %v", code, o.Excluded())
	}
	if code, _ := send(apiCall{"POST", "/jobs", `{"no_such_field": 1}`}, "bearer api-t0ken"); code != http.StatusBadRequest {
		t.Errorf("POST /jobs with the token and a bad body = %d, want 400 (past the check)", code)
	}
}

// FuzzAPIRequest: no request without the API token starts a job, changes the excluded nodes or
// gets past the check on a route other than /health and the services' ones.
func FuzzAPIRequest(f *testing.F) {
	for _, c := range guardedCalls {
		f.Add([]byte(c.method + " " + c.path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(c.body)) + "\r\n\r\n" + c.body))
	}
	f.Add([]byte("PUT /nodes/excluded HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Length: 6\r\n\r\n[\"n1\"]"))
	f.Add([]byte("POST //jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"))
	o := newAPIOrchestrator(f, "api-t0ken")
	h := o.Handler()
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		if httpHasToken(req, "api-t0ken") {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if _, ok := o.Current(); ok {
			t.Fatalf("%q without the token started a job", raw)
		}
		if ex := o.Excluded(); len(ex) != 0 {
			t.Fatalf("%q without the token excluded %v", raw, ex)
		}
	})
}

func httpHasToken(r *http.Request, tok string) bool {
	return strings.Contains(r.Header.Get("Authorization"), tok)
}
