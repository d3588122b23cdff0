package faas_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/testenv"
)

// contractCase is one request of python/tests/testdata/contract/cases.json.
type contractCase struct {
	Name    string      `json:"name"`
	Method  string      `json:"method"`
	Target  string      `json:"target"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body"`
	BodyHex string      `json:"body_hex"`
	Chunked bool        `json:"chunked"`
}

// answer is what a client compares: the status, the body, and every header except those the
// servers on the way add on their own.
type answer struct {
	Status  int
	Headers http.Header
	Body    string
}

// transport headers: set by the HTTP servers, watchdogs and gateway, not by the handler or Flask.
var transport = []string{"Content-Length", "Date", "Server", "Connection", "Keep-Alive",
	"X-Handler-Seconds", "X-Duration-Seconds", gateway.InstanceHeader}

func ask(t *testing.T, base string, c contractCase) answer {
	t.Helper()
	body := []byte(c.Body)
	if c.BodyHex != "" {
		var err error
		if body, err = hex.DecodeString(c.BodyHex); err != nil {
			t.Fatalf("case %s: body_hex: %v", c.Name, err)
		}
	}
	req, err := http.NewRequest(c.Method, base+c.Target, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("case %s: %v", c.Name, err)
	}
	switch {
	case c.Chunked: // no length: the client sends it chunked
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), -1
	case len(body) == 0:
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for _, h := range c.Headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("case %s: %v", c.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("case %s: reading the body: %v", c.Name, err)
	}
	for _, k := range transport {
		resp.Header.Del(k)
	}
	if allow := resp.Header.Get("Allow"); allow != "" { // Flask lists the methods from a set: any order
		methods := strings.Split(allow, ", ")
		slices.Sort(methods)
		resp.Header.Set("Allow", strings.Join(methods, ", "))
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// TestContractTable runs the contract table (python/tests/testdata/contract) through every
// runtime mode behind the watchdog, and through the gateway, and compares each answer with
// the template's own index.py (testdata/python3-http) behind the same watchdog in http mode,
// as OpenFaaS runs it behind of-watchdog: status, body bytes and headers must be equal. A
// raising handler's traceback must reach the function's log. tests/test_contract.py does the
// same for the runtimes without a watchdog.
func TestContractTable(t *testing.T) {
	py, err := faas.FindPython()
	if err != nil {
		t.Fatalf("%v (make setup builds the venv)", err)
	}
	dir, err := faas.ResolveHandler(filepath.Join("python", "tests", "testdata", "contract"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []contractCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	if len(table.Cases) < 30 {
		t.Fatalf("cases.json has %d cases: the table is not loaded as written", len(table.Cases))
	}

	// serve runs a watchdog for cfg with its function's log in a buffer.
	serve := func(t *testing.T, cfg watchdog.Config) (string, *testenv.SyncBuffer) {
		t.Helper()
		log := &testenv.SyncBuffer{}
		cfg.Log, cfg.ExecTimeout = log, 30*time.Second
		w, err := watchdog.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(w.Handler())
		t.Cleanup(func() { srv.Close(); w.Close() })
		return srv.URL, log
	}
	instance := func(t *testing.T, in faas.Instance) watchdog.Config {
		t.Helper()
		in.Handler = dir
		cfg, err := faas.WatchdogFor(py, in)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	zygote := func(t *testing.T) (string, *testenv.SyncBuffer) {
		t.Helper()
		log := &testenv.SyncBuffer{}
		z, err := faas.StartZygoteLog(context.Background(), py, dir, filepath.Join(t.TempDir(), "z.sock"), log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(z.Stop)
		return z.Socket, log
	}

	refAddr := testenv.FreeAddr(t)
	_, port, _ := net.SplitHostPort(refAddr)
	ref, refLog := serve(t, watchdog.Config{Mode: watchdog.ModeHTTP, UpstreamAddr: refAddr, Env: py.Env(),
		Process: []string{py.Interpreter, filepath.Join(filepath.Dir(dir), "python3-http", "reference.py"), dir, "--port", port}})
	want := make([]answer, len(table.Cases))
	for i, c := range table.Cases {
		want[i] = ask(t, ref, c)
	}
	checkTable(t, table.Cases, want)
	checkTraceback(t, "template", refLog)

	modes := []struct {
		name  string
		start func(t *testing.T) (url string, log *testenv.SyncBuffer)
	}{
		{"http-continuum", func(t *testing.T) (string, *testenv.SyncBuffer) {
			return serve(t, instance(t, faas.Instance{Mode: faas.ModeHTTP, Server: faas.ServerContinuum}))
		}},
		{"http-flask", func(t *testing.T) (string, *testenv.SyncBuffer) {
			return serve(t, instance(t, faas.Instance{Mode: faas.ModeHTTP, Server: faas.ServerFlask}))
		}},
		{"classic", func(t *testing.T) (string, *testenv.SyncBuffer) {
			return serve(t, instance(t, faas.Instance{Mode: faas.ModeClassic}))
		}},
		{"classic-zygote", func(t *testing.T) (string, *testenv.SyncBuffer) {
			sock, log := zygote(t)
			url, _ := serve(t, instance(t, faas.Instance{Mode: faas.ModeClassic, Zygote: sock}))
			return url, log
		}},
		{"http-zygote", func(t *testing.T) (string, *testenv.SyncBuffer) {
			sock, log := zygote(t)
			url, _ := serve(t, instance(t, faas.Instance{Mode: faas.ModeHTTP, Zygote: sock}))
			return url, log
		}},
		{"gateway-http", func(t *testing.T) (string, *testenv.SyncBuffer) {
			return startGateway(t, py, &gateway.Function{Name: "contract", Handler: dir, Mode: faas.ModeHTTP})
		}},
		{"gateway-classic", func(t *testing.T) (string, *testenv.SyncBuffer) {
			return startGateway(t, py, &gateway.Function{Name: "contract", Handler: dir, Mode: faas.ModeClassic})
		}},
		{"gateway-classic-zygote", func(t *testing.T) (string, *testenv.SyncBuffer) {
			return startGateway(t, py, &gateway.Function{Name: "contract", Handler: dir, Mode: faas.ModeClassic, Zygote: true})
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			url, log := m.start(t)
			for i, c := range table.Cases {
				if got := ask(t, url, c); !equal(got, want[i]) {
					t.Errorf("%s (%s %s):\n  template %+v\n  %-8s %+v", c.Name, c.Method, c.Target, want[i], m.name, got)
				}
			}
			checkTraceback(t, m.name, log)
		})
	}
}

func equal(a, b answer) bool {
	if a.Status != b.Status || a.Body != b.Body || len(a.Headers) != len(b.Headers) {
		return false
	}
	for k, v := range a.Headers {
		if !slices.Equal(v, b.Headers[k]) {
			return false
		}
	}
	return true
}

// checkTable: the reference's answers are the ones the table is about (a table the reference
// answered with 200s everywhere would compare nothing).
func checkTable(t *testing.T, cases []contractCase, want []answer) {
	t.Helper()
	by := map[string]answer{}
	for i, c := range cases {
		by[c.Name] = want[i]
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"raise is a 500", by["raise"].Status == 500},
		{"query-missing is a 400", by["query-missing"].Status == 400},
		{"dict-body is JSON", by["dict-body"].Headers.Get("Content-Type") == "application/json" && by["dict-body"].Status == 201},
		{"list-body is str() of it", by["list-body"].Body == "[1, 'a', None]"},
		{"header-pairs keeps both", slices.Equal(by["header-pairs"].Headers["X-Rep"], []string{"1", "2"})},
		{"headers joins a repeated header", strings.Contains(by["headers"].Body, `"repeated":"one, two"`)},
		{"query's getlist", strings.Contains(by["query"].Body, `"getlist":["1","2"]`)},
		{"unrouted-method is a 405", by["unrouted-method"].Status == 405},
		{"a chunked body's length", strings.Contains(by["body-chunked"].Body, `"content_length":"14"`)},
		{"no underscored header", strings.Contains(by["headers"].Body, `"underscored":[null,null]`)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("the reference's answers are not what the table expects: %s", c.name)
		}
	}
}

// checkTraceback: the raising case's traceback reached the function's log.
func checkTraceback(t *testing.T, name string, log *testenv.SyncBuffer) {
	t.Helper()
	testenv.EventuallyNoError(t, 30*time.Second, name+": the traceback in the function's log", func() error {
		s := log.String()
		for _, want := range []string{"Exception on /raise [POST]", "Traceback (most recent call last)",
			"RuntimeError: contract table: this handler raises"} {
			if !strings.Contains(s, want) {
				return fmt.Errorf("no %q in the log:\n%s", want, s)
			}
		}
		return nil
	})
}

// startGateway serves fn through a gateway with local instances; the URL is the function's base.
func startGateway(t *testing.T, py faas.Python, fn *gateway.Function) (string, *testenv.SyncBuffer) {
	t.Helper()
	fn.ExecTimeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := &testenv.SyncBuffer{}
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{fn}, Provider: &gateway.LocalProvider{Python: py, Log: log},
		Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL + "/function/" + fn.Name, log
}
