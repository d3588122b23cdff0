package testbed

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// PlatformName is the testbed's name among platforms: its endpoints start with "testbed:".
const PlatformName = "testbed"

// Provider brings testbeds up as the experiment runner's platform (package platform): every
// run on a fresh testbed of its own on this host, named for the run.
type Provider struct {
	// StateDir holds the testbeds' state and control sockets (default DefaultStateDir()).
	StateDir string
}

func (p Provider) stateDir() string {
	if p.StateDir == "" {
		return DefaultStateDir()
	}
	return p.StateDir
}

// Check accepts every topology and fault of the scenario schema: the testbed applies them all.
func (p Provider) Check(*Topology, []Fault) error { return nil }

// Endpoint is EndpointFor the provider's state dir.
func (p Provider) Endpoint(name string) string { return EndpointFor(p.stateDir(), name) }

// Up brings cfg.Topology up as testbed cfg.Name (Up); cfg.Binary enters the nodes.
func (p Provider) Up(_ context.Context, cfg platform.Config) (platform.Platform, error) {
	tb, err := Up(cfg.Topology, Options{Name: cfg.Name, StateDir: p.StateDir, Seed: cfg.Seed, Launcher: cfg.Binary, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	return &Platform{tb: tb}, nil
}

// EndpointFor is the platform endpoint of testbed name in stateDir, "testbed:<name>@<state dir>":
// what a component started on the testbed is given to reach it (through its control socket).
func EndpointFor(stateDir, name string) string {
	return platform.Endpoint{Platform: PlatformName, Address: name + "@" + stateDir}.String()
}

// ParseEndpointAddress reads the address of a testbed endpoint, "<name>@<state dir>", or
// "<name>" alone for the default state dir.
func ParseEndpointAddress(addr string) (name, stateDir string, err error) {
	name, stateDir, _ = strings.Cut(addr, "@")
	if err := ValidName(name); err != nil {
		return "", "", fmt.Errorf("testbed endpoint %q: %w", addr, err)
	}
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	return name, stateDir, nil
}

// ClientFor is a control-socket client of the testbed endpoint names (platform.Endpoint's
// string form); it fails for another platform's endpoint.
func ClientFor(endpoint string) (*Client, error) {
	ep, err := platform.ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if ep.Platform != PlatformName {
		return nil, fmt.Errorf("platform endpoint %q: not a testbed's (testbed:<name>@<state dir>)", endpoint)
	}
	name, dir, err := ParseEndpointAddress(ep.Address)
	if err != nil {
		return nil, err
	}
	return NewClient(dir, name), nil
}

// Platform is a running testbed seen as a platform.Platform, as Provider.Up returns it.
type Platform struct {
	tb *Testbed

	mu      sync.Mutex
	sampler *Sampler // the latest Sample's, for Network; guarded by mu
}

// Testbed is the testbed itself.
func (p *Platform) Testbed() *Testbed { return p.tb }

// NodeAddrs maps every node to its IPv4 address.
func (p *Platform) NodeAddrs() map[string]string {
	out := map[string]string{}
	for _, n := range p.tb.nodes {
		out[n.name] = n.addr.String()
	}
	return out
}

// Start runs spec as a supervised process of its node (Testbed.Start).
func (p *Platform) Start(_ context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	ps := procSpec(spec)
	ps.Stdout = spec.Stdout
	proc, err := p.tb.Start(ps)
	if err != nil {
		return nil, err
	}
	return proc, nil
}

// procSpec is spec as a process of the testbed: all of it but Stdout (which only an
// in-process start can honour), Image and ExecIn (the testbed runs no images).
func procSpec(spec platform.InstanceSpec) ProcSpec {
	return ProcSpec{Name: spec.Name, Node: spec.Node, Args: spec.Args, Env: spec.Env, Dir: spec.Dir,
		LogDir: spec.LogDir, DataDirs: spec.DataDirs, CPUs: spec.CPUs,
		Memory: spec.Memory, StopSignal: spec.StopSignal, Service: spec.Service}
}

// Dial connects from inside node's network namespace.
func (p *Platform) Dial(ctx context.Context, node, network, addr string) (net.Conn, error) {
	return p.tb.Dial(ctx, node, network, addr)
}

// Apply injects f (Testbed.Inject); it takes effect at once, so ctx is not needed.
func (p *Platform) Apply(_ context.Context, f Fault) (string, error) { return p.tb.Inject(f) }

// Sample runs a Sampler until ctx ends; Network then reports what the fabric did meanwhile.
func (p *Platform) Sample(ctx context.Context, interval time.Duration, emit func([]Sample)) {
	s := p.tb.NewSampler(interval)
	p.mu.Lock()
	p.sampler = s
	p.mu.Unlock()
	s.Run(ctx, emit)
}

// Links says how the run's links are emulated (platform.LinkDescriber).
func (p *Platform) Links() string { return "testbed fabric, hop by hop" }

// Network is what the fabric did while the latest Sample ran: its figures from every sampling
// round (platform.NetworkReporter).
func (p *Platform) Network() platform.NetworkReport {
	p.mu.Lock()
	s := p.sampler
	p.mu.Unlock()
	if s == nil {
		return platform.NetworkReport{}
	}
	return s.Network()
}

// Down removes the testbed (Testbed.Down).
func (p *Platform) Down() error { return p.tb.Down() }

var (
	_ platform.Provider        = Provider{}
	_ platform.Platform        = (*Platform)(nil)
	_ platform.NetworkReporter = (*Platform)(nil)
	_ platform.Instance        = (*Proc)(nil)
)
