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
)

// recProvider is a Provider that records what runs: instances (served by one HTTP server) and
// zygotes (Prepare). Its first Stop takes firstStopDelay, as LocalProvider's can (SIGTERM, then
// the upstream's exit), which is what lets a gateway that does not wait for a scale-down's drain
// return before it.
type recProvider struct {
	srv            *httptest.Server
	firstStopDelay time.Duration
	prepareErr     map[string]error

	mu             sync.Mutex
	stops          int
	running        map[string]bool
	zygotes        map[string]bool
	closed         bool
	runningAtClose []string
}

func newRecProvider(t *testing.T) *recProvider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	return &recProvider{srv: srv, running: map[string]bool{}, zygotes: map[string]bool{}}
}

func (p *recProvider) Start(_ context.Context, _ *gateway.Function, id string) (gateway.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
