package agent

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestServeStopsEverything: when ctx ends, Serve stops the running instances (SIGTERM first),
// closes the dial streams, and returns with none of its goroutines left.
func TestServeStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := newServer(Options{Node: "edge1", StateDir: t.TempDir(), StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln) }()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c := NewClient("http://"+ln.Addr().String(), hc)
	tctx := testCtx(t)

	if _, err := c.Start(tctx, sh("long", "trap 'exit 5' TERM; echo ready; while :; do sleep 0.05; done")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "long ready", fileHas(s, "long", "stdout", "ready"))
	far, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := far.Accept(); err == nil {
			accepted <- conn
		}
	}()
	conn, err := c.Dial(tctx, "tcp", far.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	farConn := <-accepted
	defer farConn.Close()

	// A follower of the output, which must end when the run ends.
	var out bytes.Buffer
	outDone := make(chan error, 1)
	go func() { outDone <- c.Output(tctx, "long", 1, "stdout", &out) }()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	if r, _ := s.lookup("long", 1); !r.exited() || r.exit != (Exit{Code: 5}) {
		t.Fatalf("run after Serve returned: exited %v, %+v; want exit 5 from the TERM trap", r.exited(), r.exit)
	}
	if _, err := io.ReadAll(conn); err != nil {
		t.Logf("dial stream ended with %v", err) // closed either way
	}
	// The output follower got everything or was cut by the server's close; either way it ended.
	select {
	case <-outDone:
	case <-time.After(30 * time.Second):
		t.Fatal("Output did not end")
	}
	eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before+2 })
}

// TestLeftoverHoldsPipes: a process the run left behind that keeps stdout open does not keep
// the run from ending: PipeGrace bounds the wait, and what the run wrote is all there.
func TestLeftoverHoldsPipes(t *testing.T) {
	s, c := startAgentWith(t, Options{StateDir: t.TempDir(), PipeGrace: 100 * time.Millisecond})
	tctx := testCtx(t)
	run, err := c.Start(tctx, sh("bg", "sleep 30 & echo hi"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.Wait(tctx, "bg", run)
	if err != nil || ex != (Exit{}) {
		t.Fatalf("Wait = %+v, %v", ex, err)
	}
	var out bytes.Buffer
	if err := c.Output(tctx, "bg", run, "stdout", &out); err != nil || out.String() != "hi\n" {
		t.Fatalf("Output = %q, %v", out.String(), err)
	}
	// The leftover outlives its run (the agent signals only running runs): end it here.
	r, _ := s.lookup("bg", run)
	_ = syscall.Kill(-r.pgid, syscall.SIGKILL)
}
