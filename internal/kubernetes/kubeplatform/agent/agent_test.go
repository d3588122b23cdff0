package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startAgent serves an agent on 127.0.0.1:0 for the test and stops it (and checks that Serve
// returned) at cleanup.
func startAgent(t *testing.T) (*server, *Client) {
	t.Helper()
	return startAgentWith(t, Options{Node: "edge1", StateDir: t.TempDir(), StopGrace: 2 * time.Second})
}

// startAgentWith is startAgent with the given options.
func startAgentWith(t *testing.T, opts Options) (*server, *Client) {
	t.Helper()
	s, err := newServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return s, NewClient("http://"+ln.Addr().String(), nil)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sh(name, script string) StartRequest {
	return StartRequest{Name: name, Args: []string{"/bin/sh", "-c", script}}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fileHas(s *server, name, stream, substr string) func() bool {
	return func() bool {
		b, _ := os.ReadFile(s.logPath(name, stream))
		return strings.Contains(string(b), substr)
	}
}

func TestStartWaitExit(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	cases := []struct {
		name, script string
		want         Exit
	}{
		{"ok", "exit 0", Exit{Code: 0}},
		{"seven", "exit 7", Exit{Code: 7}},
		{"killed", "kill -9 $$", Exit{Code: -1, Signal: "killed"}},
		{"termed", "kill -TERM $$", Exit{Code: -1, Signal: "terminated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := c.Start(ctx, sh(tc.name, tc.script))
			if err != nil || run != 1 {
				t.Fatalf("Start = %d, %v; want run 1", run, err)
			}
			ex, err := c.Wait(ctx, tc.name, run)
			if err != nil || ex != tc.want {
				t.Fatalf("Wait = %+v, %v; want %+v", ex, err, tc.want)
			}
		})
	}
}

func TestStartMissingBinary(t *testing.T) {
	_, c := startAgent(t)
	_, err := c.Start(testCtx(t), StartRequest{Name: "x", Args: []string{"/no/such/program"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "/no/such/program") {
		t.Fatalf("Start = %v; want a 400 naming /no/such/program", err)
	}
}

func TestRestartAppendsOutput(t *testing.T) {
	s, c := startAgent(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	r1, err := c.Start(ctx, sh("svc", "echo one; while [ ! -f "+gate+" ]; do sleep 0.01; done"))
	if err != nil {
		t.Fatal(err)
	}
	// A running name cannot start again.
	var ae *APIError
	if _, err := c.Start(ctx, sh("svc", "true")); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("second Start while running = %v; want 409", err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "svc", r1); err != nil {
		t.Fatal(err)
	}
	r2, err := c.Start(ctx, sh("svc", "echo two; echo err2 >&2"))
	if err != nil || r2 != 2 {
		t.Fatalf("restart = %d, %v; want run 2", r2, err)
	}
	var out2, out1, err2 bytes.Buffer
	if err := c.Output(ctx, "svc", 2, "stdout", &out2); err != nil || out2.String() != "two\n" {
		t.Fatalf("Output run 2 = %q, %v", out2.String(), err)
	}
	if err := c.Output(ctx, "svc", 2, "stderr", &err2); err != nil || err2.String() != "err2\n" {
		t.Fatalf("stderr run 2 = %q, %v", err2.String(), err)
	}
	if err := c.Output(ctx, "svc", 1, "stdout", &out1); err != nil || out1.String() != "one\n" {
		t.Fatalf("Output run 1 = %q, %v", out1.String(), err)
	}
	b, _ := os.ReadFile(s.logPath("svc", "stdout"))
	if string(b) != "one\ntwo\n" {
		t.Fatalf("stdout file = %q; want both runs appended", b)
	}
}

func TestOutputFollowsFromFirstByte(t *testing.T) {
	s, c := startAgent(t)
	ctx := testCtx(t)
	gate := filepath.Join(t.TempDir(), "go")
	run, err := c.Start(ctx, sh("f", "echo early; while [ ! -f "+gate+" ]; do sleep 0.01; done; echo late"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "early output", fileHas(s, "f", "stdout", "early"))
	var out bytes.Buffer
	errc := make(chan error, 1)
	go func() { errc <- c.Output(ctx, "f", run, "stdout", &out) }()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if out.String() != "early\nlate\n" {
		t.Fatalf("Output = %q; want early and late", out.String())
	}
}

// procState reads the state letter of /proc/PID/stat.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

func TestSignalNodePauseResume(t *testing.T) {
	s, c := startAgent(t)
	ctx := testCtx(t)
	if _, err := c.Start(ctx, sh("ticker", "i=0; while :; do i=$((i+1)); echo $i; sleep 0.01; done")); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		st, err := os.Stat(s.logPath("ticker", "stdout"))
		if err != nil {
			return 0
		}
		return st.Size()
	}
	eventually(t, "ticking", func() bool { return size() > 0 })
	if err := c.Signal(ctx, "", syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r, _ := s.lookup("ticker", 0)
	eventually(t, "every process of the group stopped", func() bool {
		for _, pid := range processGroups()[r.pgid] {
			// 'Z': a child that exited just as its stopped parent could no longer reap it;
			// 'D': a shell that vforked waits uninterruptibly for its child, stopped before exec.
			if st := procState(pid); st != 'T' && st != 'Z' && st != 'D' && st != 0 {
				return false
			}
		}
		return true
	})
	paused := size()
	// A stopped group cannot write; watch for a while (any later write would be a failure).
	for range 20 {
		time.Sleep(5 * time.Millisecond)
		if got := size(); got != paused {
			t.Fatalf("output grew from %d to %d while paused", paused, got)
		}
	}
	if err := c.Signal(ctx, "", syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "output after resume", func() bool { return size() > paused })
	ex, err := c.Stop(ctx, "ticker", 5*time.Second)
	if err != nil || ex.Code != -1 || ex.Signal != "terminated" {
		t.Fatalf("Stop = %+v, %v; want terminated", ex, err)
	}
}

func TestStop(t *testing.T) {
	s, c := startAgent(t)
	ctx := testCtx(t)
	// With a grace: the TERM trap runs and decides the exit code.
	if _, err := c.Start(ctx, sh("graceful", `trap 'echo bye; exit 3' TERM; echo ready; while :; do sleep 0.05; done`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "graceful ready", fileHas(s, "graceful", "stdout", "ready"))
	ex, err := c.Stop(ctx, "graceful", 10*time.Second)
	if err != nil || ex != (Exit{Code: 3}) {
		t.Fatalf("Stop graceful = %+v, %v; want exit 3", ex, err)
	}
	var out bytes.Buffer
	if err := c.Output(ctx, "graceful", 1, "stdout", &out); err != nil || out.String() != "ready\nbye\n" {
		t.Fatalf("graceful output = %q, %v", out.String(), err)
	}
	// Ignoring TERM: SIGKILL after the grace.
	if _, err := c.Start(ctx, sh("stubborn", `trap '' TERM; echo ready; while :; do sleep 0.05; done`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "stubborn ready", fileHas(s, "stubborn", "stdout", "ready"))
	ex, err = c.Stop(ctx, "stubborn", 50*time.Millisecond)
	if err != nil || ex != (Exit{Code: -1, Signal: "killed"}) {
		t.Fatalf("Stop stubborn = %+v, %v; want killed", ex, err)
	}
	// Grace 0: SIGKILL at once, the TERM trap never runs.
	if _, err := c.Start(ctx, sh("now", `trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "now ready", fileHas(s, "now", "stdout", "ready"))
	if ex, err := c.Stop(ctx, "now", 0); err != nil || ex != (Exit{Code: -1, Signal: "killed"}) {
		t.Fatalf("Stop grace 0 = %+v, %v; want killed", ex, err)
	}
	// Stopping what has exited returns its exit.
	if ex, err := c.Stop(ctx, "stubborn", 0); err != nil || ex.Signal != "killed" {
		t.Fatalf("Stop again = %+v, %v", ex, err)
	}
}

func TestBinarySubstitution(t *testing.T) {
	_, c := startAgentWith(t, Options{StateDir: t.TempDir(), Self: "/bin/echo"})
	tctx := testCtx(t)
	run, err := c.Start(tctx, StartRequest{Name: "self", Args: []string{"/runner/bin/continuum", "hi"}, Binary: "/runner/bin/continuum"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := c.Output(tctx, "self", run, "stdout", &out); err != nil || out.String() != "hi\n" {
		t.Fatalf("Output = %q, %v; want the agent's own binary to run", out.String(), err)
	}
}

func TestBadRequests(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	if _, err := c.Start(ctx, sh("done", "true")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "done", 1); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		what   string
		call   func() error
		status int
		says   string
	}{
		{"unknown name", func() error { _, err := c.Wait(ctx, "nope", 1); return err }, 404, `no instance "nope"`},
		{"unknown run", func() error { _, err := c.Wait(ctx, "done", 5); return err }, 404, "no run 5"},
		{"bad stream", func() error { return rawGet(ctx, c, "/instances/done/runs/1/output/stdin") }, 400, `invalid stream "stdin"`},
		{"bad name", func() error { _, err := c.Start(ctx, sh("../x", "true")); return err }, 400, "invalid instance name"},
		{"bad env", func() error {
			r := sh("e", "true")
			r.Env = []string{"NOEQUALS"}
			_, err := c.Start(ctx, r)
			return err
		}, 400, `invalid env entry "NOEQUALS"`},
		{"no args", func() error { _, err := c.Start(ctx, StartRequest{Name: "a"}); return err }, 400, "no command"},
		{"relative push path", func() error { return rawGet(ctx, c, "/files?path=rel/dir") }, 400, `invalid path "rel/dir"`},
		{"signal exited", func() error { return c.Signal(ctx, "done", syscall.SIGTERM) }, 409, "not running"},
		{"signal unknown", func() error { return c.Signal(ctx, "nope", syscall.SIGTERM) }, 404, `no instance "nope"`},
		{"stop unknown", func() error { _, err := c.Stop(ctx, "nope", 0); return err }, 404, `no instance "nope"`},
		{"pull missing", func() error { return c.Pull(ctx, "/no/such/dir", t.TempDir()) }, 404, "/no/such/dir"},
	}
	for _, tc := range cases {
		err := tc.call()
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != tc.status || !strings.Contains(ae.Message, tc.says) {
			t.Errorf("%s: %v; want HTTP %d saying %q", tc.what, err, tc.status, tc.says)
		}
	}
	// The client refuses relative paths before asking.
	if err := c.Push(ctx, "rel", "/abs"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("Push relative = %v", err)
	}
	if err := c.Output(ctx, "done", 1, "stdin", io.Discard); err == nil || !strings.Contains(err.Error(), "stdin") {
		t.Errorf("Output bad stream = %v", err)
	}
}

func rawGet(ctx context.Context, c *Client, path string) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil, "")
	if err == nil {
		resp.Body.Close()
	}
	return err
}

func TestEnvAndDir(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "made", "here")
	req := sh("env", `[ "$(pwd)" = "`+dir+`" ] || exit 1; exit $CODE`)
	req.Env = []string{"CODE=9"}
	req.Dir = dir
	run, err := c.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err := c.Wait(ctx, "env", run); err != nil || ex.Code != 9 {
		t.Fatalf("Wait = %+v, %v; want 9 (env passed, dir created and used)", ex, err)
	}
}
