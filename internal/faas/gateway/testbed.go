package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/testbed"
)

// PlatformClient is the client through which a gateway started on the platform at endpoint
// (package platform, Endpoint; a scenario's faas-gateway is given its run's) starts its
// instances there. The testbed is the only platform the gateway can start instances on so far;
// another platform's endpoint is an error naming it. It does not connect: a faas-gateway kind
// calls it to check a scenario.
func PlatformClient(endpoint string) (*testbed.Client, error) {
	ep, err := platform.ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if ep.Platform != testbed.PlatformName {
		return nil, fmt.Errorf("the faas gateway cannot start instances on platform %s (it can on: %s)", ep.Platform, testbed.PlatformName)
	}
	return testbed.ClientFor(endpoint)
}

// DefaultBasePort is TestbedProvider.BasePort's default.
const DefaultBasePort = 18080

// TestbedProvider starts instances as processes of the testbed the gateway runs in: each a
// `continuum faas watchdog` on the gateway's node, in a cgroup of its own with the function's
// CPU limit, so the testbed samples every instance's CPU and memory like any component's.
type TestbedProvider struct {
	Client *testbed.Client
	Node   string // the gateway's node, where instances run
	Binary string // the continuum binary
	LogDir string // where instances' logs go (the run's logs)
	// Prefix makes process names unique in the testbed (the gateway's instance name).
	Prefix string
	// BasePort is the first port instances listen on (default DefaultBasePort).
	BasePort int
	// CPUs per instance (0 = unlimited).
	CPUs float64
	// Python runs the functions' zygotes.
	Python faas.Python
	// WatchdogArgs renders an instance's command line after the binary: `faas watchdog` and
	// its flags serving fn on listen, forked from the zygote on the unix socket zygote if that
	// is not empty. It is faascmd's, which renders them from the flags the command parses.
	WatchdogArgs func(fn *Function, listen, zygote string) []string

	mu      sync.Mutex
	ports   map[string]int
	zygotes zygotes
}

// Start runs the instance's watchdog and waits until it answers its health check.
func (p *TestbedProvider) Start(ctx context.Context, fn *Function, id string) (Instance, error) {
	if p.WatchdogArgs == nil {
		return Instance{}, errors.New("testbed provider: no WatchdogArgs to render instances' command lines")
	}
	port := p.takePort(id)
	var sock string
	if fn.Zygote {
		var err error
		if sock, err = p.zygote(ctx, fn); err != nil {
			p.releasePort(id)
			return Instance{}, err
		}
	}
	args := append([]string{p.Binary}, p.WatchdogArgs(fn, "127.0.0.1:"+strconv.Itoa(port), sock)...)
	name := p.Prefix + "-" + id
	// The watchdog finds Python through the environment, wherever the binary is.
	spec := testbed.ProcSpec{Name: name, Node: p.Node, Args: args, Env: p.Python.LocateEnv(), LogDir: p.LogDir, CPUs: p.CPUs}
	if _, err := p.Client.Start(spec); err != nil {
		p.releasePort(id)
		return Instance{}, fmt.Errorf("start %s on %s: %w", name, p.Node, err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitHealthy(ctx, url); err != nil {
		_ = p.Client.Stop(name)
		p.releasePort(id)
		return Instance{}, fmt.Errorf("instance %s: %w", name, err)
	}
	return Instance{ID: id, URL: url}, nil
}

// Stop stops the instance's process (its watchdog drains what it has first).
func (p *TestbedProvider) Stop(_ context.Context, inst Instance) error {
	defer p.releasePort(inst.ID)
	return p.Client.Stop(p.Prefix + "-" + inst.ID)
}

func (p *TestbedProvider) takePort(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ports == nil {
		p.ports = map[string]int{}
	}
	base := p.BasePort
	if base == 0 {
		base = DefaultBasePort
	}
	used := map[int]bool{}
	for _, port := range p.ports {
		used[port] = true
	}
	port := base
	for used[port] {
		port++
	}
	p.ports[id] = port
	return port
}

func (p *TestbedProvider) releasePort(id string) {
	p.mu.Lock()
	delete(p.ports, id)
	p.mu.Unlock()
}

// Prepare starts fn's zygote, if it has one.
func (p *TestbedProvider) Prepare(ctx context.Context, fn *Function) error {
	if !fn.Zygote {
		return nil
	}
	_, err := p.zygote(ctx, fn)
	return err
}

// zygote is the socket of fn's zygote, which runs on the node like the instances, as a
// process of the testbed.
func (p *TestbedProvider) zygote(ctx context.Context, fn *Function) (string, error) {
	return p.zygotes.get(ctx, fn, func(ctx context.Context, socket string) (func(), error) {
		name := p.Prefix + "-zygote-" + fn.Name
		zargs := p.Python.ZygoteArgs(fn.Handler, socket)
		if _, err := p.Client.Start(testbed.ProcSpec{Name: name, Node: p.Node, Args: zargs, Env: p.Python.Env(), LogDir: p.LogDir}); err != nil {
			return nil, err
		}
		if err := faas.WaitZygote(ctx, socket, nil); err != nil {
			_ = p.Client.Stop(name)
			return nil, err
		}
		return func() { _ = p.Client.Stop(name) }, nil
	})
}

// Close stops the zygotes.
func (p *TestbedProvider) Close() { p.zygotes.close() }

// CPUSeconds is the CPU time of the instance's process and what it started (its cgroup), as
// the testbed reports it.
func (p *TestbedProvider) CPUSeconds(_ context.Context, inst Instance) (float64, error) {
	st, err := p.Client.Status()
	if err != nil {
		return 0, err
	}
	name := p.Prefix + "-" + inst.ID
	for _, ps := range st.Procs {
		if ps.Name == name {
			return ps.CPUSeconds, nil
		}
	}
	return 0, fmt.Errorf("instance %s: no process %s in the testbed", inst.ID, name)
}

// waitHealthy polls url's /_/health until it answers 200 or ctx ends.
func waitHealthy(ctx context.Context, url string) error {
	c := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/_/health", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w", url, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
