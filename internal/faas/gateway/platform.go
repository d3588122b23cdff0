package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/platform"
)

// PlatformClient is the client through which a gateway started on the platform at endpoint
// (package platform, Endpoint; a scenario's faas-gateway is given its run's) starts its
// instances there: the one that platform registered (platform.InstancesFor). It does not
// connect: a faas-gateway kind calls it to check a scenario.
func PlatformClient(endpoint string) (platform.Instances, error) {
	c, err := platform.InstancesFor(endpoint)
	if err != nil {
		return nil, fmt.Errorf("the faas gateway cannot start instances there: %w", err)
	}
	return c, nil
}

// DefaultBasePort is PlatformProvider.BasePort's default.
const DefaultBasePort = 18080

// instanceStopGrace is how long a stopped instance's watchdog has to drain what it has.
const instanceStopGrace = 5 * time.Second

// PlatformProvider starts instances on the platform the gateway runs on (platform.Instances):
// each a `continuum faas watchdog` on the gateway's node, with the function's CPU limit, so the
// platform samples every instance's CPU and memory like any component's.
type PlatformProvider struct {
	Platform platform.Instances
	Node     string // the gateway's node, where instances run
	Binary   string // the continuum binary
	LogDir   string // where instances' logs go (the run's logs)
	// Prefix makes instance names unique on the platform (the gateway's instance name).
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

	ports   instancePorts
	zygotes zygotes
}

// Start runs the instance's watchdog and waits until it answers its health check.
func (p *PlatformProvider) Start(ctx context.Context, fn *Function, id string) (Instance, error) {
	if p.WatchdogArgs == nil {
		return Instance{}, errors.New("platform provider: no WatchdogArgs to render instances' command lines")
	}
	port := p.ports.take(id, p.BasePort)
	var sock string
	if fn.Zygote {
		var err error
		if sock, err = p.zygote(ctx, fn); err != nil {
			p.ports.release(id)
			return Instance{}, err
		}
	}
	// The watchdog checks no key (the gateway does: key_file, max_inflight, the counts), so
	// it listens on loopback wherever it shares the gateway's network (on the testbed, the
	// gateway's node): nothing else reaches it. Elsewhere it listens on every address and is
	// reached at the host the platform names.
	listen, loopback := ":"+strconv.Itoa(port), p.Platform.SharesNode(p.Node)
	if loopback {
		listen = "127.0.0.1" + listen
	}
	args := append([]string{p.Binary}, p.WatchdogArgs(fn, listen, sock)...)
	name := p.Prefix + "-" + id
	// The watchdog finds Python through the environment, wherever the binary is.
	spec := platform.InstanceSpec{Name: name, Node: p.Node, Args: args, Env: p.Python.LocateEnv(), LogDir: p.LogDir, CPUs: p.CPUs}
	host, err := p.Platform.Start(ctx, spec)
	if err != nil {
		p.ports.release(id)
		return Instance{}, err
	}
	if loopback {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	if err := waitHealthy(ctx, url); err != nil {
		_ = p.Platform.Stop(context.WithoutCancel(ctx), name, instanceStopGrace)
		p.ports.release(id)
		return Instance{}, fmt.Errorf("instance %s: %w", name, err)
	}
	return Instance{ID: id, URL: url}, nil
}

// Stop stops the instance (its watchdog drains what it has first).
func (p *PlatformProvider) Stop(ctx context.Context, inst Instance) error {
	defer p.ports.release(inst.ID)
	return p.Platform.Stop(ctx, p.Prefix+"-"+inst.ID, instanceStopGrace)
}

// Prepare starts fn's zygote, if it has one.
func (p *PlatformProvider) Prepare(ctx context.Context, fn *Function) error {
	if !fn.Zygote {
		return nil
	}
	_, err := p.zygote(ctx, fn)
	return err
}

// zygote is the socket of fn's zygote, which runs on the node like the instances, as an
// instance of the platform: the gateway, the zygote and the instances forked from it share
// the node's filesystem, where the socket is.
func (p *PlatformProvider) zygote(ctx context.Context, fn *Function) (string, error) {
	if err := CheckZygote(p.Platform, p.Node, fn); err != nil {
		return "", err
	}
	return p.zygotes.get(ctx, fn, func(ctx context.Context, socket string) (func(), error) {
		name := p.Prefix + "-zygote-" + fn.Name
		zargs := p.Python.ZygoteArgs(fn.Handler, socket)
		spec := platform.InstanceSpec{Name: name, Node: p.Node, Args: zargs, Env: p.Python.Env(), LogDir: p.LogDir}
		if _, err := p.Platform.Start(ctx, spec); err != nil {
			return nil, err
		}
		stop := func() { _ = p.Platform.Stop(context.Background(), name, instanceStopGrace) }
		if err := faas.WaitZygote(ctx, socket, nil); err != nil {
			stop()
			return nil, err
		}
		return stop, nil
	})
}

// Close stops the zygotes.
func (p *PlatformProvider) Close() { p.zygotes.close() }

// CPUSeconds is the CPU time of the instance and what it started, as the platform counts it in
// the node; an instance that runs apart (a pod) reports its function's own (watchdogCPU).
func (p *PlatformProvider) CPUSeconds(ctx context.Context, inst Instance) (float64, error) {
	if !p.Platform.SharesNode(p.Node) {
		return watchdogCPU(ctx, inst)
	}
	st, err := p.Platform.State(ctx)
	if err != nil {
		return 0, err
	}
	name := p.Prefix + "-" + inst.ID
	if is, ok := st.Instance(name); ok {
		return is.CPUSeconds, nil
	}
	return 0, fmt.Errorf("instance %s: the platform runs no %s", inst.ID, name)
}
