package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// Service is one FL service process: a global or local aggregator, or a client.
type Service struct {
	Name string   // unique: "fl-ga-n1", "fl-la-n2", "fl-cl-n4"
	Node string   // the FL node it serves as
	Host string   // where it runs (a testbed node; "" for a local runner)
	Args []string // the full command line
	Env  []string
	Out  string // its output directory (fl.jsonl)
	// Clients are the clients a group process runs (Node is empty then); Signature tells
	// whether two group services run the same clients against the same servers.
	Clients   []string
	Signature string
}

// Observation is what a Runner sees of the services it started and of the nodes.
type Observation struct {
	// Exited maps a service that is no longer running to how it ended ("exit 1", "signal killed").
	Exited map[string]string
	// Isolated holds the hosts no other host can reach (a partition of that node).
	Isolated map[string]bool
}

// Runner starts and stops services somewhere and observes them.
type Runner interface {
	// Start runs s and returns the host at which other services reach its ports: its host
	// node's where services share their node (the testbed), the service's own where each runs
	// apart (a pod of its own, whose address a restart changes).
	Start(ctx context.Context, s Service) (host string, err error)
	Stop(ctx context.Context, name string) error
	Observe(ctx context.Context) (Observation, error)
	// Forget drops an exited service the orchestrator has dealt with, at once: Observe no
	// longer reports it. What is left of it on the platform (an ended pod) goes with the run,
	// or with the next start of its name.
	Forget(name string)
	// Apart says whether services on host run apart from its files: then no file of the
	// orchestrator's (a data directory) reaches them, and what they need comes in their
	// command line.
	Apart(host string) bool
}

// PlatformRunner runs services as instances of the platform the orchestrator runs on
// (platform.Instances): each on its host node, so the platform samples its CPU and memory like
// any component's and its traffic crosses the links between nodes.
type PlatformRunner struct {
	Platform platform.Instances
	LogDir   string

	mu      sync.Mutex
	started map[string]bool // services started and not stopped since
}

// serviceStartTimeout bounds a service's start on the platform (a pod scheduled and running;
// not the service's own readiness, which waitReady bounds).
const serviceStartTimeout = 3 * time.Minute

// serviceStopGrace is how long a stopped service has to end by itself.
const serviceStopGrace = 5 * time.Second

// Start runs s on its host node. Its output directory is also a data directory: where a service
// runs apart (a pod), the platform gives it one of its own there, writable by the service.
func (r *PlatformRunner) Start(ctx context.Context, s Service) (string, error) {
	if s.Host == "" {
		return "", fmt.Errorf("service %s: no host node", s.Name)
	}
	// A pod that never runs (its node's kubelet lost) must not hold the orchestrator's loop.
	ctx, cancel := context.WithTimeout(ctx, serviceStartTimeout)
	defer cancel()
	host, err := r.Platform.Start(ctx, platform.InstanceSpec{Name: s.Name, Node: s.Host, Args: s.Args, Env: s.Env, Dir: s.Out,
		DataDirs: []string{s.Out}, LogDir: r.LogDir})
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if r.started == nil {
		r.started = map[string]bool{}
	}
	r.started[s.Name] = true
	r.mu.Unlock()
	return host, nil
}

func (r *PlatformRunner) Stop(ctx context.Context, name string) error {
	r.mu.Lock()
	delete(r.started, name)
	r.mu.Unlock()
	return r.Platform.Stop(ctx, name, serviceStopGrace)
}

func (r *PlatformRunner) Forget(name string) {
	r.mu.Lock()
	delete(r.started, name)
	r.mu.Unlock()
}

// gone is how a service that is no longer among the platform's instances ended: something
// other than the orchestrator removed it (a pod deleted or evicted, its node drained).
const gone = "gone from the platform"

// Observe reports as exited the FL services that ended, and those started here that the
// platform no longer has (gone); the platform's isolated nodes as isolated.
func (r *PlatformRunner) Observe(ctx context.Context) (Observation, error) {
	// The services started before the state is read: one started meanwhile is not in it.
	r.mu.Lock()
	started := maps.Clone(r.started)
	r.mu.Unlock()
	st, err := r.Platform.State(ctx)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{Exited: map[string]string{}, Isolated: map[string]bool{}}
	present := map[string]bool{}
	for _, in := range st.Instances {
		present[in.Name] = true
		if strings.HasPrefix(in.Name, "fl-") && !in.Running {
			obs.Exited[in.Name] = in.Ended
		}
	}
	for name := range started {
		if !present[name] {
			obs.Exited[name] = gone
		}
	}
	for _, n := range st.Nodes {
		if n.Isolated {
			obs.Isolated[n.Name] = true
		}
	}
	return obs, nil
}

// Apart: services run apart where the platform's instances do not share their node.
func (r *PlatformRunner) Apart(host string) bool { return !r.Platform.SharesNode(host) }
