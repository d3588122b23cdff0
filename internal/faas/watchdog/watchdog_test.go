package watchdog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/testenv"
)

// python finds the venv make setup builds; the tests run the real Python runtimes.
func python(t *testing.T) faas.Python {
	t.Helper()
	p, err := faas.FindPython()
	if err != nil {
		t.Fatalf("%v (make setup builds the venv)", err)
	}
	return p
}

func handler(t *testing.T, name string) string {
	t.Helper()
	h, err := faas.ResolveHandler(filepath.Join("python", "functions", name))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// writeHandler makes a function folder whose handler.py is src.
func writeHandler(t *testing.T, src string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "handler.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// start runs a watchdog for the handler in mode behind an httptest server.
func start(t *testing.T, mode, handlerDir string, tune func(*watchdog.Config)) *httptest.Server {
	t.Helper()
	_, srv := startWatchdog(t, mode, handlerDir, tune)
	return srv
}

func startWatchdog(t *testing.T, mode, handlerDir string, tune func(*watchdog.Config)) (*watchdog.Watchdog, *httptest.Server) {
	t.Helper()
	p := python(t)
	cfg := watchdog.Config{Mode: mode, Env: p.Env(), CGI: true, ExecTimeout: 20 * time.Second}
	switch mode {
	case modeClassicZygote:
		cfg.Mode = watchdog.ModeClassic
		z, err := faas.StartZygote(context.Background(), p, handlerDir, filepath.Join(t.TempDir(), "z.sock"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(z.Stop)
		cfg.Process, cfg.Zygote = p.ClassicArgs(handlerDir), z.Socket
	case watchdog.ModeClassic:
		cfg.Process = p.ClassicArgs(handlerDir)
	case watchdog.ModeHTTP:
		cfg.UpstreamAddr = testenv.FreeAddr(t)
		_, port, _ := net.SplitHostPort(cfg.UpstreamAddr)
		n, _ := strconv.Atoi(port)
		var err error
		if cfg.Process, err = p.ServerArgs(faas.ServerContinuum, handlerDir, "127.0.0.1", n, 0); err != nil {
			t.Fatal(err)
		}
	}
	if tune != nil {
		tune(&cfg)
	}
	w, err := watchdog.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(func() { srv.Close(); w.Close() })
	return w, srv
}

func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// modeClassicZygote is the classic mode with each request's process forked from a zygote.
const modeClassicZygote = "classic-zygote"

const batch = `[{"sensor_id":"t1","name":"t","type":"temperature","unit":"°C","value":20},
{"sensor_id":"t2","name":"t","type":"temperature","unit":"°C","value":22}]`

func TestModes(t *testing.T) {
	raises := writeHandler(t, "def handle(event, context):\n    raise ValueError('no calibration for t9')\n")
	for _, mode := range []string{watchdog.ModeClassic, modeClassicZygote, watchdog.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			srv := start(t, mode, handler(t, "iot-analytics"), nil)
			code, hdr, body := post(t, srv.URL+"/", batch)
			if code != 200 || hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("got %d %q: %s", code, hdr.Get("Content-Type"), body)
			}
			var out struct {
				Valid  int `json:"valid"`
				ByType map[string]struct {
					Mean float64 `json:"mean"`
				} `json:"by_type"`
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil || out.Valid != 2 || out.ByType["temperature"].Mean != 21 {
				t.Fatalf("result %s (%v)", body, err)
			}
			// t_ex from inside the handler, t_rr-side time from the watchdog.
			tex, err1 := strconv.ParseFloat(hdr.Get("X-Handler-Seconds"), 64)
			tw, err2 := strconv.ParseFloat(hdr.Get("X-Duration-Seconds"), 64)
			if err1 != nil || err2 != nil || tex <= 0 || tw < tex {
				t.Errorf("X-Handler-Seconds %q, X-Duration-Seconds %q: want 0 < handler <= watchdog", hdr.Get("X-Handler-Seconds"), hdr.Get("X-Duration-Seconds"))
			}
			if code, _, body := post(t, srv.URL+"/", `{"a":1}`); code != 400 || !strings.Contains(body, "want an array of sensor messages") {
				t.Errorf("bad batch: %d %s", code, body)
			}
			if resp, err := http.Get(srv.URL + "/_/health"); err != nil || resp.StatusCode != 200 {
				t.Errorf("health: %v %v", resp, err)
			}

			log := &testenv.SyncBuffer{}
			srv = start(t, mode, raises, func(c *watchdog.Config) { c.Log = log })
			// The template's answer: werkzeug's 500 page without the exception, which goes to
			// the function's log (the zygote's, in classic-zygote mode: see TestContractTable).
			if code, _, body := post(t, srv.URL+"/", "x"); code != 500 || !strings.Contains(body, "Internal Server Error") ||
				strings.Contains(body, "no calibration") {
				t.Errorf("raising handler: %d %s", code, body)
			}
			if mode != modeClassicZygote { // http: the upstream's output reaches the log through a pipe
				testenv.Eventually(t, 30*time.Second, "the traceback in the function's log", func() bool {
					return strings.Contains(log.String(), "ValueError: no calibration for t9")
				})
			}
			if code, _, _ := post(t, srv.URL+"/", "x"); code != 500 {
				t.Errorf("second call to the raising handler: %d, want 500 again (still serving)", code)
			}
		})
	}
}

// TestExecTimeout: a handler past the exec timeout is answered 504, and the watchdog goes on
// serving (classic: the process was killed; http: the upstream finishes and takes the next).
func TestExecTimeout(t *testing.T) {
	slow := writeHandler(t, "import time\n\ndef handle(event, context):\n"+
		"    if event.body == b'slow':\n        time.sleep(3)\n    return {'body': 'done'}\n")
	for _, mode := range []string{watchdog.ModeClassic, modeClassicZygote, watchdog.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			srv := start(t, mode, slow, func(c *watchdog.Config) { c.ExecTimeout = 500 * time.Millisecond })
			code, _, body := post(t, srv.URL+"/", "slow")
			if code != http.StatusGatewayTimeout || !strings.Contains(body, "exec timeout of 500ms") {
				t.Fatalf("slow request: %d %s", code, body)
			}
			// The next request is served (in http mode once the upstream is done with the slow
			// one; it answers within the timeout of this test, not the watchdog's).
			testenv.EventuallyNoError(t, 30*time.Second, "a fast request after the timeout", func() error {
				if code, _, body := post(t, srv.URL+"/", "fast"); code != 200 || body != "done" {
					return fmt.Errorf("%d %s", code, body)
				}
				return nil
			})
		})
	}
}

func TestMaxInflight(t *testing.T) {
	slow := writeHandler(t, "import time\n\ndef handle(event, context):\n    time.sleep(1)\n    return {'body': 'ok'}\n")
	srv := start(t, watchdog.ModeClassic, slow, func(c *watchdog.Config) { c.MaxInflight = 1 })
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = post(t, srv.URL+"/", "")
		}()
	}
	wg.Wait()
	var ok, limited int
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	if ok < 1 || limited < 1 || ok+limited != len(codes) {
		t.Errorf("codes %v: want at least one 200 and one 429, nothing else", codes)
	}
}

// TestUpstreamRestarts: the http mode's process is killed; requests fail with 502 until it is
// started again, then succeed.
func TestUpstreamRestarts(t *testing.T) {
	die := writeHandler(t, "import os\n\ndef handle(event, context):\n"+
		"    if event.body == b'die':\n        os._exit(3)\n    return {'body': 'pid %d' % os.getpid()}\n")
	srv := start(t, watchdog.ModeHTTP, die, nil)
	_, _, first := post(t, srv.URL+"/", "")
	if code, _, _ := post(t, srv.URL+"/", "die"); code != http.StatusBadGateway {
		t.Errorf("request that killed the upstream: %d, want 502", code)
	}
	testenv.EventuallyNoError(t, 30*time.Second, "a new upstream process", func() error {
		code, _, body := post(t, srv.URL+"/", "")
		if code != 200 || body == first {
			return fmt.Errorf("%d %s (first process: %s)", code, body, first)
		}
		return nil
	})
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  watchdog.Config
		want string
	}{
		{watchdog.Config{Mode: "fork", Process: []string{"x"}}, `mode "fork": want classic or http`},
		{watchdog.Config{Mode: "http", Process: []string{"x"}}, "no upstream address"},
		{watchdog.Config{Mode: "http", Process: []string{"x"}, UpstreamAddr: "8080"}, "want host:port"},
		{watchdog.Config{Mode: "classic"}, "no function process"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
	// An http upstream that cannot start is an error from New, not a hang.
	p := python(t)
	_, err := watchdog.New(context.Background(), watchdog.Config{Mode: "http", Env: p.Env(), UpstreamAddr: testenv.FreeAddr(t),
		Process: []string{p.Interpreter, "-m", "continuum_functions.server", "/nonexistent"}, ReadyTimeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before listening") {
		t.Errorf("bad upstream: %v", err)
	}
}

// TestCPUSeconds: the function's CPU is counted (classic: the ended processes; http: the
// upstream). Each request burns 0.2 s of CPU time (not wall time), so the count is at least
// that however busy the machine is.
func TestCPUSeconds(t *testing.T) {
	burn := writeHandler(t, "import time\n\ndef handle(event, context):\n"+
		"    end = time.process_time() + 0.2\n    while time.process_time() < end:\n        pass\n    return {'body': 'ok'}\n")
	for _, mode := range []string{watchdog.ModeClassic, watchdog.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			w, srv := startWatchdog(t, mode, burn, nil)
			before := w.CPUSeconds()
			for i := 0; i < 3; i++ {
				if code, _, body := post(t, srv.URL+"/", ""); code != 200 {
					t.Fatalf("%d %s", code, body)
				}
			}
			if got := w.CPUSeconds() - before; got < 0.58 {
				t.Errorf("CPU seconds grew by %.3f over 3 requests burning 0.2 s each", got)
			}
			resp, err := http.Get(srv.URL + "/_/metrics")
			if err != nil {
				t.Fatal(err)
			}
			m, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(m), "watchdog_function_cpu_seconds_total") {
				t.Error("metrics lack watchdog_function_cpu_seconds_total")
			}
		})
	}
}
