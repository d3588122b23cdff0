package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/platform"
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
	// Log is the functions' log: what their processes and zygotes write, tracebacks included
	// (default this process's stderr).
	Log io.Writer

	mu      sync.Mutex
	runs    map[string]func()
	wds     map[string]*watchdog.Watchdog
	zygotes zygotes
}

// CPUSeconds is the CPU time of the instance's function processes.
func (p *LocalProvider) CPUSeconds(_ context.Context, inst Instance) (float64, error) {
	p.mu.Lock()
	w := p.wds[inst.ID]
	p.mu.Unlock()
	if w == nil {
		return 0, fmt.Errorf("instance %s: not running", inst.ID)
	}
	return w.CPUSeconds(), nil
}

func (p *LocalProvider) log() io.Writer {
	if p.Log == nil {
		return os.Stderr
	}
	return p.Log
}

// Prepare starts fn's zygote, if it has one.
func (p *LocalProvider) Prepare(ctx context.Context, fn *Function) error {
	_, err := p.zygote(ctx, fn)
	return err
}

// zygote is the socket of fn's zygote ("" without one), started if need be.
func (p *LocalProvider) zygote(ctx context.Context, fn *Function) (string, error) {
	if !fn.Zygote {
		return "", nil
	}
	return p.zygotes.get(ctx, fn, func(ctx context.Context, socket string) (func(), error) {
		z, err := faas.StartZygoteLog(ctx, p.Python, fn.Handler, socket, p.log())
		if err != nil {
			return nil, err
		}
		return z.Stop, nil
	})
}

// Start serves a new watchdog for fn on a free loopback port.
func (p *LocalProvider) Start(ctx context.Context, fn *Function, id string) (Instance, error) {
	zsock, err := p.zygote(ctx, fn)
	if err != nil {
		return Instance{}, err
	}
	cfg, err := faas.WatchdogFor(p.Python, faas.Instance{Mode: fn.Mode, Handler: fn.Handler, Server: fn.Server, Zygote: zsock,
		ExecTimeout: fn.ExecTimeout})
	if err != nil {
		return Instance{}, err
	}
	cfg.Listen, cfg.ExecTimeout, cfg.MaxInflight, cfg.Log = "127.0.0.1:0", fn.ExecTimeout, fn.MaxInflight, p.log()
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
			p.runs, p.wds = map[string]func(){}, map[string]*watchdog.Watchdog{}
		}
		p.runs[id] = func() { stop(); <-done }
		p.wds[id] = w
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
	delete(p.wds, inst.ID)
	p.mu.Unlock()
	if stop == nil {
		return fmt.Errorf("instance %s: not running", inst.ID)
	}
	stop()
	return nil
}

// Close stops the zygotes.
func (p *LocalProvider) Close() { p.zygotes.close() }

// CheckZygote refuses fn's zygote mode where its instances would not share the gateway's node
// (a platform whose instances are pods of their own): they fork from the zygote through a unix
// socket on the node's filesystem.
func CheckZygote(c platform.Instances, node string, fn *Function) error {
	if fn.Zygote && !c.SharesNode(node) {
		return fmt.Errorf("function %s: zygote mode needs its instances beside the gateway, forked through a socket on its node's filesystem, and on this platform each instance runs apart: set zygote to false", fn.Name)
	}
	return nil
}

// zygotes runs one zygote per function, started when its first instance is.
type zygotes struct {
	mu   sync.Mutex
	dir  string
	byFn map[string]*zygote
}

type zygote struct {
	ready  chan struct{}
	socket string
	stop   func()
	err    error
}

// get returns the socket of fn's zygote, starting it with start if it is not running.
func (zs *zygotes) get(ctx context.Context, fn *Function, start func(context.Context, string) (func(), error)) (string, error) {
	zs.mu.Lock()
	if zs.byFn == nil {
		zs.byFn = map[string]*zygote{}
	}
	if zs.dir == "" {
		d, err := os.MkdirTemp("", "continuum-zygotes-")
		if err != nil {
			zs.mu.Unlock()
			return "", err
		}
		zs.dir = d
	}
	z := zs.byFn[fn.Name]
	if z == nil || z.err != nil {
		z = &zygote{ready: make(chan struct{}), socket: filepath.Join(zs.dir, fn.Name+".sock")}
		zs.byFn[fn.Name] = z
		go func() {
			z.stop, z.err = start(context.WithoutCancel(ctx), z.socket)
			close(z.ready)
		}()
	}
	zs.mu.Unlock()
	select {
	case <-z.ready:
		if z.err != nil {
			return "", fmt.Errorf("function %s: zygote: %w", fn.Name, z.err)
		}
		return z.socket, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (zs *zygotes) close() {
	zs.mu.Lock()
	defer zs.mu.Unlock()
	for _, z := range zs.byFn {
		<-z.ready
		if z.stop != nil {
			z.stop()
		}
	}
	zs.byFn = nil
	if zs.dir != "" {
		_ = os.RemoveAll(zs.dir)
		zs.dir = ""
	}
}
