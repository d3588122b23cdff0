package gateway

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
)

// Instance is one running instance of a function.
type Instance struct {
	ID  string // unique per gateway: <function>-<n>
	URL string // base URL; requests go to URL + the path after /function/NAME
}

// Provider starts and stops instances. Start returns once the instance answers requests.
type Provider interface {
	Start(ctx context.Context, fn *Function, id string) (Instance, error)
	Stop(ctx context.Context, inst Instance) error
}

// LocalProvider runs instances on this machine: each a watchdog served from this process,
// with its function processes as children (classic: one per request; http: one upstream).
// It is what `continuum faas gateway` uses outside the testbed and what the tests use.
type LocalProvider struct {
	Python faas.Python

	mu   sync.Mutex
	runs map[string]func()
}

// Start serves a new watchdog for fn on a free loopback port.
func (p *LocalProvider) Start(ctx context.Context, fn *Function, id string) (Instance, error) {
	cfg, err := faas.WatchdogFor(p.Python, fn.Mode, fn.Handler, fn.Server, 0)
	if err != nil {
		return Instance{}, err
	}
	cfg.Listen, cfg.ExecTimeout, cfg.MaxInflight = "127.0.0.1:0", fn.ExecTimeout, fn.MaxInflight
	w, err := watchdog.New(ctx, cfg)
	if err != nil {
		return Instance{}, fmt.Errorf("instance %s: %w", id, err)
	}
	sctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- w.Serve(sctx, func(a net.Addr) { addr <- a }) }()
	select {
	case a := <-addr:
		p.mu.Lock()
		if p.runs == nil {
			p.runs = map[string]func(){}
		}
		p.runs[id] = func() { stop(); <-done }
		p.mu.Unlock()
		return Instance{ID: id, URL: "http://" + a.String()}, nil
	case err := <-done:
		stop()
		return Instance{}, fmt.Errorf("instance %s: %w", id, err)
	}
}

// Stop shuts the instance's watchdog down (it drains its requests) and its processes.
func (p *LocalProvider) Stop(_ context.Context, inst Instance) error {
	p.mu.Lock()
	stop := p.runs[inst.ID]
	delete(p.runs, inst.ID)
	p.mu.Unlock()
	if stop == nil {
		return fmt.Errorf("instance %s: not running", inst.ID)
	}
	stop()
	return nil
}
