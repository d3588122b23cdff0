package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestCloseBoundsAStuckRequest: a function call that never ends does not keep Close waiting:
// after the shutdown grace the instance is stopped and the call fails with 503, Close returns,
// and the provider is closed after its instances stopped (issue 41, defect 9: drain polled the
// request count with no bound, so Close never returned while a call hung).
func TestCloseBoundsAStuckRequest(t *testing.T) {
	p := newRecProvider(t)
	fn := recFunction("fn", 1)
	fn.ExecTimeout = time.Hour // the call is bounded by the shutdown grace, not by this
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{fn}, Provider: p, Tick: time.Hour,
		ShutdownGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	defer func() { // before srv.Close, which waits for the call, when the test failed
		select {
		case <-p.hold:
		default:
			close(p.hold)
		}
	}()
	answer := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/function/fn/hold")
		if err != nil {
			answer <- -1
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	testenv.Eventually(t, 30*time.Second, "the call is under way", func() bool { return g.Status()[0].Inflight == 1 })
	closed := make(chan struct{})
	go func() {
		g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s while a call hung (shutdown grace 50ms)")
	}
	select {
	case code := <-answer:
		if code != http.StatusServiceUnavailable {
			t.Errorf("the call cut by the shutdown got %d, want 503", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hung call got no answer after Close")
	}
	running, _, closedP, atClose := p.state()
	if len(running) != 0 || !closedP || len(atClose) != 0 {
		t.Errorf("after Close: running %v, provider closed %v, running at its close %v; want none, true, none", running, closedP, atClose)
	}
	// A request after Close fails at once instead of waiting for an instance.
	if code, body := rawGet(t, srv.URL, "/function/fn/x"); code != http.StatusServiceUnavailable {
		t.Errorf("a call after Close: %d %q, want 503", code, body)
	}
}

// TestScaleDownDrainIsBounded: an instance scaled away while its answer is stuck on a client
// that does not read is stopped once the function's exec timeout has passed, and the stuck
// request is failed (issue 41, defect 9).
func TestScaleDownDrainIsBounded(t *testing.T) {
	streaming := make(chan struct{}, 1)
	p := newRecProvider(t)
	p.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An endless answer: the gateway's writes to the client that does not read block.
		chunk := []byte(strings.Repeat("x", 64<<10))
		select {
		case streaming <- struct{}{}:
		default:
		}
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	fn := recFunction("fn", 1)
	fn.ExecTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{fn}, Provider: p, Tick: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	defer g.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /function/fn/stream HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil { // the head only; the body is never read
		t.Fatal(err)
	}
	<-streaming
	if err := g.Scale("fn", 0, "test"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the drained instance is stopped", func() bool {
		running, _, _, _ := p.state()
		s := g.Status()[0]
		return len(running) == 0 && s.Draining == 0 && s.Inflight == 0
	})
}
