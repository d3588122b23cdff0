package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

// recProvider is a Provider that records what runs: instances (served by one HTTP server) and
// zygotes (Prepare). Its first Stop takes firstStopDelay, as LocalProvider's can (SIGTERM, then
// the upstream's exit), which is what lets a gateway that does not wait for a scale-down's drain
// return before it.
type recProvider struct {
	srv            *httptest.Server
	hold           chan struct{} // requests to /hold wait until it is closed
	firstStopDelay time.Duration
	prepareErr     map[string]error

	mu             sync.Mutex
	starts, stops  int
	running        map[string]bool
	zygotes        map[string]bool
	closed         bool
	runningAtClose []string
}

func newRecProvider(t *testing.T) *recProvider {
	p := &recProvider{hold: make(chan struct{}), running: map[string]bool{}, zygotes: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-p.hold
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *recProvider) Start(_ context.Context, _ *gateway.Function, id string) (gateway.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	p.running[id] = true
	return gateway.Instance{ID: id, URL: p.srv.URL}, nil
}

func (p *recProvider) Stop(_ context.Context, inst gateway.Instance) error {
	p.mu.Lock()
	p.stops++
	first := p.stops == 1
	p.mu.Unlock()
	if first {
		time.Sleep(p.firstStopDelay)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, inst.ID)
	return nil
}

func (p *recProvider) Prepare(_ context.Context, fn *gateway.Function) error {
	if err := p.prepareErr[fn.Name]; err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.zygotes[fn.Name] = true
	return nil
}

func (p *recProvider) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for id := range p.running {
		p.runningAtClose = append(p.runningAtClose, id)
	}
	clear(p.zygotes)
}

func (p *recProvider) state() (running, zygotes []string, closed bool, atClose []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.running {
		running = append(running, id)
	}
	for fn := range p.zygotes {
		zygotes = append(zygotes, fn)
	}
	slices.Sort(running)
	return running, zygotes, p.closed, slices.Clone(p.runningAtClose)
}

func recFunction(name string, replicas int) *gateway.Function {
	return &gateway.Function{Name: name, Handler: "/nonexistent", Mode: faas.ModeHTTP, Replicas: replicas, MaxReplicas: 4}
}

// TestCloseWaitsForScaledDownInstances: an instance removed by a scale-down just before Close is
// stopped before Close returns, and before the provider is closed (issue 30, defect 1).
func TestCloseWaitsForScaledDownInstances(t *testing.T) {
	p := newRecProvider(t)
	p.firstStopDelay = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{recFunction("fn", 2)}, Provider: p, Tick: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if running, _, _, _ := p.state(); len(running) != 2 {
		t.Fatalf("running before the scale-down: %v, want 2 instances", running)
	}
	if err := g.Scale("fn", 1, "test"); err != nil {
		t.Fatal(err)
	}
	// Wait until the gateway took the instance out of its ready set (its drain has begun).
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := g.Status()[0]
		if s.AvailableReplicas == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scale-down to 1 never happened: %+v", s)
		}
		time.Sleep(time.Millisecond)
	}
	g.Close()
	running, _, closed, atClose := p.state()
	if len(running) != 0 {
		t.Errorf("instances still running after Close returned: %v", running)
	}
	if !closed {
		t.Error("the provider was not closed")
	}
	if len(atClose) != 0 {
		t.Errorf("the provider was closed while instances still ran: %v", atClose)
	}
}

// TestNewClosesProviderWhenPrepareFails: a function whose Prepare fails does not leave the zygotes
// of the functions prepared before it running (issue 30, defect 7).
func TestNewClosesProviderWhenPrepareFails(t *testing.T) {
	p := newRecProvider(t)
	p.prepareErr = map[string]error{"b": errors.New("no such handler")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Functions are prepared in their order: a first, then b fails.
	_, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{recFunction("a", 1), recFunction("b", 1)}, Provider: p, Tick: time.Hour})
	if err == nil || !errors.Is(err, p.prepareErr["b"]) {
		t.Fatalf("New: %v, want b's Prepare error", err)
	}
	running, zygotes, closed, _ := p.state()
	if !closed || len(zygotes) != 0 || len(running) != 0 {
		t.Errorf("after a failed New: provider closed %v, zygotes %v, instances %v; want closed, none, none", closed, zygotes, running)
	}
}

// TestIdleScaleToZeroHoldsUntilTraffic: once idle_timeout scaled a function to zero, the
// concurrency autoscaler must not bring an instance back from the busy samples still in its stable
// window; only a new request does (issue 30, defect 2: a cold start every two ticks).
func TestIdleScaleToZeroHoldsUntilTraffic(t *testing.T) {
	p := newRecProvider(t)
	events := make(chan gateway.ScaleEvent, 1000)
	fn := recFunction("fn", 1)
	fn.Scaler, fn.MinReplicas, fn.IdleTimeout = gateway.ScalerConcurrency, 0, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{fn}, Provider: p, Tick: fnTick,
		OnScale: func(e gateway.ScaleEvent) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	defer g.Close()
	waitEvent := func(what string, ok func(gateway.ScaleEvent) bool) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e := <-events:
				if ok(e) {
					return
				}
			case <-timeout:
				t.Fatalf("no scale event %s within 30 s", what)
			}
		}
	}
	// Two requests held in flight on one instance: the panic window scales up.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + "/function/fn/hold")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	waitEvent("scaling up under load", func(e gateway.ScaleEvent) bool { return e.To > 1 })
	close(p.hold)
	wg.Wait()
	waitEvent("to zero when idle", func(e gateway.ScaleEvent) bool { return e.To == 0 && e.Reason == "idle" })
	p.mu.Lock()
	starts := p.starts
	p.mu.Unlock()
	// No traffic for 50 ticks: nothing may scale the function up again (the busy samples stay in
	// the 60 s stable window all along).
	quiet := time.After(50 * fnTick)
	for {
		select {
		case e := <-events:
			if e.To > 0 {
				t.Fatalf("scaled %d -> %d (%s) with no traffic after idle scaled it to zero", e.From, e.To, e.Reason)
			}
		case <-quiet:
			p.mu.Lock()
			started := p.starts - starts
			p.mu.Unlock()
			if started != 0 {
				t.Fatalf("%d instances started with no traffic after idle scaled to zero", started)
			}
			// A request still wakes it.
			if a := call(t, srv.URL+"/function/fn/", ""); a.code != http.StatusOK {
				t.Fatalf("request after scale to zero: %d %s", a.code, a.body)
			}
			return
		}
	}
}

const fnTick = 20 * time.Millisecond

// TestStreamingThroughGateway: a function's streamed response (server-sent events) reaches the
// client event by event through the gateway (issue 30, defect 4: the gateway's status-recording
// writer hid the connection's Flush, so the first event came with the last).
func TestStreamingThroughGateway(t *testing.T) {
	release := make(chan struct{})
	fnSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: first\n\n"))
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("data: second\n\n"))
	}))
	defer fnSrv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{{Name: "events", URL: fnSrv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	defer close(release) // first of the defers: the function's handler returns
	if line := testenv.FirstLineWithin(t, srv.URL+"/function/events/", "data:", 20*time.Second); line != "data: first" {
		t.Fatalf("first line %q", line)
	}
}
