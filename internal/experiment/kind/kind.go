// Package kind is what a system implements to take part in experiments: a Kind (a component
// deployed on a node, or a workload that drives components), the Env its instance runs in, the
// Command the platform starts, the Endpoints a component serves, and the registry kinds add
// themselves to from their system's kinds package (see internal/systems/install).
//
// It is a leaf: it imports neither the runner nor the report nor any system, so a system's
// adapter depends on it and the runner depends on it, never on each other.
package kind

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/platform"
)

// Role says whether a kind is a component (a server deployed on a node) or a workload (a client
// that drives components and measures them).
type Role string

const (
	RoleComponent Role = "component"
	RoleWorkload  Role = "workload"
)

// DefaultOverrun is how long a workload may run past the run's duration when its kind does not
// say (Kind.Overrun): its request timeout and the time to write its outputs.
const DefaultOverrun = 30 * time.Second

// Kind is a component or workload type a scenario can name, as the runner, the scenario loader
// and the report see it: its config is untyped (any). Nobody fills one in: a system declares a
// Def of its own config type and Registers it in init(), which builds the Kind. The runner only
// talks to this struct, so adding a kind never touches it.
type Kind struct {
	Name    string
	Role    Role
	Summary string
	// System is the system whose kinds package registered the kind: its folder under
	// internal/ ("kv", "shareddata", "app"). `continuum kinds` groups kinds by it.
	System string
	// Doc is where a user reads about the kind: a file of the repository with an optional
	// #anchor (default docs/<System>.md).
	Doc string
	// OldNames are names the kind had before; a scenario may still use one (the loader
	// takes it for Name and warns, naming Name). Lookup finds the kind under them too.
	OldNames []string
	// Package is the import path of the package that registered the kind (Register records
	// it), so that a test can hold System to the folder the kind lives in.
	Package string
	// NewConfig returns a pointer to the kind's config struct, pre-filled with defaults. The
	// scenario's `config:` mapping is decoded into it strictly (unknown fields are errors).
	NewConfig func() any
	// Validate checks a decoded config beyond types (ranges, required fields). Optional.
	Validate func(cfg any) error
	// Command builds the process the testbed starts on the instance's node. It must not start
	// anything itself: `continuum run --check` calls it to validate a scenario.
	Command func(env Env, cfg any) (Command, error)
	// Endpoints lists what a component serves (for components; optional). Workloads find the
	// component they drive through them, the scenario checker finds port clashes on a node, and
	// a service declaration without a port takes the first one.
	Endpoints func(cfg any) []Endpoint
	// Prepare reads what a valid config refers to outside the scenario file (paths relative to
	// scenarioDir, the scenario file's directory; a container image's own configuration) once,
	// when the scenario is loaded, so that Endpoints and Command can use it. Optional; its error
	// is reported as the config's.
	Prepare func(cfg any, scenarioDir string) error
	// Set applies a run-time change (a "set" event) to a running instance. Optional: nil means the
	// kind cannot be changed at run time. change is the event's `config:` mapping.
	Set func(ctx context.Context, env Env, cfg any, change *yaml.Node) error
	// Overrun is how long a workload may need past the run's duration (a load phase before it
	// starts measuring, its request timeout, writing its outputs). Optional: DefaultOverrun.
	Overrun func(cfg any) time.Duration
	// Metrics reads what the kind's instances reported about themselves during a finished run
	// (structured files in their output directories, never their log lines), as metric -> field
	// -> value like the workloads' stats, for summary.json. Optional; called once per run with
	// all instances of the kind.
	Metrics func(out RunOutput) map[string]map[string]float64
	// Helper marks a component kind that sets the system under test up (a cluster joiner)
	// rather than being part of it: summary.json's resource metrics leave its instances out.
	Helper bool
	// Stacks names the setup stacks (internal/setup's catalog: `continuum setup --status`) its
	// instances need beyond the core: a scenario using the kind does not start without them.
	Stacks []string
	// NewProgress follows a run's instances of a workload kind (instance name -> decoded
	// config) and says how far they are in the kind's own terms. Optional: nil leaves the
	// runner to count the load engine's progress lines as plain operations.
	NewProgress func(cfgs map[string]any) Progress
	// Outputs are the files a workload writes into its output directory for the report, as
	// run.json records them (results.Instance.Outputs). Nil: the load engine's files
	// (stats.json, timeseries.csv, percentiles.csv, errors.csv).
	Outputs []string
}

// Progress is what a workload kind says about its running instances on the runner's live
// line: each instance's stdout comes in a line at a time, and Text sums them up in the kind's
// own units ("round 12, accuracy 0.843"; "1200 records delivered, lag p99 35 ms";
// "120 req/s  sent 1200, none failed"). Line is called from the instances' output goroutines
// and Text from the runner's, at the same time: implementations lock.
type Progress interface {
	// Line is one line instance wrote on its stdout, without the newline; lines that are not
	// the kind's progress are ignored.
	Line(instance string, line []byte)
	// Text is the kind's progress in a few words, "" while there is nothing to say yet.
	Text() string
}

// Well-known endpoint protocols. A kind may use others; a workload asks for the ones it speaks.
const (
	ProtocolHTTP   = "http"
	ProtocolEtcdV3 = "etcd-v3" // etcd's v3 gRPC API (etcd, continuum kv)
	ProtocolRedis  = "redis"
	ProtocolKafka  = "kafka"
	ProtocolMQTT   = "mqtt"
	// ProtocolRedisCluster is Redis in cluster mode: a client must follow MOVED redirections.
	ProtocolRedisCluster = "redis-cluster"
	// ProtocolTCP and ProtocolUDP name a port without saying what is spoken on it (an image's
	// EXPOSE). A workload that speaks a TCP-based protocol may take a tcp endpoint (Env.Endpoint).
	ProtocolTCP = "tcp"
	ProtocolUDP = "udp"
)

// tcpBased reports whether every protocol asked for runs over TCP (all the well-known ones
// but udp do; a kind's own protocol names are taken to).
func tcpBased(protocols []string) bool {
	for _, p := range protocols {
		if p == ProtocolUDP || p == "sctp" {
			return false
		}
	}
	return len(protocols) > 0
}

// Endpoint is a port a component serves, named ("client", "peer", "admin") and typed by the
// protocol spoken there.
type Endpoint struct {
	Name     string
	Protocol string
	Port     int
}

// RunOutput is what a finished run left for a kind's Metrics.
type RunOutput struct {
	T0        time.Time    // wall time the run's clock (events' At) started
	Events    []FiredEvent // the events that fired without error, in order
	Instances []InstanceOutput
	// Samples is the run's samples.csv (results.ReadSamples): every instance's resources over
	// time, including instances a component started through the platform (function instances).
	Samples string
}

// InstanceOutput is one instance's output of a run.
type InstanceOutput struct {
	Name, Node string
	Config     any    // the decoded config (read only)
	Log        string // path of its stderr log (for people; Metrics reads OutDir)
	OutDir     string
}

// FiredEvent is an event of events.csv that fired without error.
type FiredEvent struct {
	At     time.Duration // from RunOutput.T0
	Action string
	Target string
}

// Component is what an instance knows about another component of the run.
type Component struct {
	Node      string
	Kind      string
	Config    any // decoded (read only)
	Endpoints []Endpoint
}

// Env is what a kind knows about where its instance runs.
type Env struct {
	Instance string            // instance name from the scenario
	Node     string            // node the instance runs on
	Nodes    map[string]string // node name -> IPv4 address (names also resolve inside every node)
	// Components are the run's component instances by name, for workloads that target them and
	// members that find their cluster.
	Components map[string]Component
	OutDir     string // per-instance results directory (workloads write their files here)
	Binary     string // absolute path of the continuum binary
	Seed       int64
	Duration   time.Duration // run duration, warm-up included
	// ScenarioDir is the directory of the scenario file: paths a scenario's author writes in a
	// config are relative to it.
	ScenarioDir string
	Warmup      time.Duration
	// Dial opens a connection from inside the instance's node, through the platform (for Set:
	// the runner's host may not reach a node's address directly). Nil in `run --check`.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Platform is the endpoint of the platform the run runs on, "<platform>:<address>" (see
	// package platform, Endpoint), for components that talk to the place they run: a kind
	// passes it on to its component (the faas gateway starts function instances there, the
	// proxy discovers service instances there), whose own provider for that platform resolves
	// it. A kind never parses it.
	Platform string
}

// Command is a process to start inside a node.
type Command struct {
	Args []string // Args[0] is the program (absolute path or looked up in PATH)
	Env  []string // extra KEY=VALUE entries
	Dir  string   // working directory (default: the instance's results dir)
	// DataDirs are directories whose size the samplers report as the instance's disk usage.
	DataDirs []string
	// CPUs, if > 0, limits the instance to that many cores (a cgroup of its own inside its
	// node's).
	CPUs float64
	// Memory, if > 0, limits the instance to that many bytes (inside its node's limit).
	Memory int64
	// ReadyAddr, if set, is a host:port inside the node that accepts TCP connections once the
	// instance is ready; the runner waits for it before starting workloads. Ready, if set,
	// replaces it with another probe.
	ReadyAddr string
	Ready     *Ready
	// Files are written before the instance starts (a relative Path is relative to Dir). They
	// are files of the runner's host: Command itself writes nothing (`run --check` calls it).
	Files []File
	// StopSignal is what stops the instance (0: SIGTERM); StopGrace, if > 0, is how long the
	// runner waits at the end of the run before it kills it (the platform's own grace otherwise).
	StopSignal syscall.Signal
	StopGrace  time.Duration
	// Image, if set, says Args run a container of this image (see platform.Image): a platform
	// that runs images itself runs the image instead.
	Image *platform.Image
}

// Ready is a readiness probe other than a TCP connect: exactly one of HTTP, Exec and Log is set.
type Ready struct {
	// HTTP is a GET of Path on Addr (host:port inside the node) that answers Status (0: any 2xx).
	HTTP *HTTPProbe
	// Exec is a command run inside the instance's node that exits 0 once the instance is ready.
	Exec []string
	// ExecInside, with Exec, is the same command as the instance's container runs it (Exec
	// being how the node runs it there): a platform that runs images itself runs ExecInside
	// in the container (see platform.Exec).
	ExecInside []string
	// Log matches a line the instance writes on its stdout or stderr.
	Log *regexp.Regexp
	// Timeout bounds the wait (0: 60 s; no bound when Retries > 0).
	Timeout time.Duration
	// Interval is the time between tries (0: the probe's own, 50 to 500 ms); StartInterval the
	// time between tries during StartPeriod (0: Interval). TryTimeout bounds one try of an Exec
	// probe (0: 10 s). Retries > 0 ends the wait after that many failed tries in a row that
	// started after StartPeriod: the model Docker's HEALTHCHECK and Kubernetes' probes share.
	Interval, StartInterval, StartPeriod, TryTimeout time.Duration
	Retries                                          int
}

// HTTPProbe is an HTTP readiness probe.
type HTTPProbe struct {
	Addr, Path string
	Status     int
}

// File is a file a kind places before its instance starts.
type File struct {
	Path string
	Data []byte
	Mode os.FileMode // 0: 0644
}

// Def declares a kind whose config is a C (the kind's config struct; its functions receive a *C).
// Register turns it into the registry's untyped Kind. The fields mean what Kind's do.
type Def[C any] struct {
	Name    string
	Role    Role
	Summary string
	// System is the registering system's folder under internal/ (required for a shipped kind:
	// internal/systems/install's test holds every kind to it).
	System string
	// Doc is where the kind is documented (default docs/<System>.md). Optional.
	Doc string
	// OldNames are the kind's former names, still accepted with a deprecation warning.
	OldNames []string
	// Defaults returns a new config pre-filled with defaults. The scenario's `config:` mapping is
	// decoded into it strictly (unknown fields are errors). Required.
	Defaults func() *C
	// Validate checks a decoded config beyond types (ranges, required fields). Optional.
	Validate func(cfg *C) error
	// Command builds the process the testbed starts on the instance's node. It must not start
	// anything itself: `continuum run --check` calls it to validate a scenario. Required.
	Command func(env Env, cfg *C) (Command, error)
	// Endpoints lists what a component serves. Optional; components only.
	Endpoints func(cfg *C) []Endpoint
	// Prepare reads what a valid config refers to outside the scenario file. Optional.
	Prepare func(cfg *C, scenarioDir string) error
	// Set applies a run-time change (a "set" event) to a running instance. Optional.
	Set func(ctx context.Context, env Env, cfg *C, change *yaml.Node) error
	// Overrun is how long a workload may need past the run's duration. Optional: DefaultOverrun.
	Overrun func(cfg *C) time.Duration
	// Metrics reads the kind's instances' outputs of a finished run (InstanceOutput.Config is
	// untyped there: a run's outputs are not one kind's). Optional.
	Metrics func(out RunOutput) map[string]map[string]float64
	// Helper marks a component kind that sets the system under test up rather than being part
	// of it.
	Helper bool
	// Stacks names the setup stacks its instances need beyond the core. Optional.
	Stacks []string
	// Progress follows the run's instances of the kind (instance name -> config) for the
	// runner's live line. Optional; workloads only.
	Progress func(cfgs map[string]*C) Progress
	// Outputs are the files a workload writes for the report (nil: the load engine's). Workloads
	// only.
	Outputs []string
}

// Register adds the kind d declares; it panics on a duplicate name or a missing field (a
// programming error).
//
// The Kind it registers wraps d's functions in closures that assert the config they get to *C.
// The assertion cannot fail in a run: every config the runner, the scenario loader and
// `run --check` pass to a kind's functions was made by that kind's NewConfig (d.Defaults) and
// decoded in place. A caller that breaks the invariant (passes another kind's config, or a C
// instead of a *C) gets a panic naming the kind and both types: a programming error, like a
// nil function, not something to report to a scenario's author.
func Register[C any](d Def[C]) {
	if d.Defaults == nil || d.Command == nil {
		panic(fmt.Sprintf("kind.Register: incomplete kind %q", d.Name))
	}
	cfgOf := func(cfg any) *C {
		c, ok := cfg.(*C)
		if !ok {
			panic(fmt.Sprintf("kind %q: config is %T, want %T (a config not made by the kind's NewConfig)", d.Name, cfg, c))
		}
		return c
	}
	k := &Kind{
		Name:      d.Name,
		Role:      d.Role,
		Summary:   d.Summary,
		System:    d.System,
		Doc:       d.Doc,
		OldNames:  d.OldNames,
		Package:   callerPackage(),
		NewConfig: func() any { return d.Defaults() },
		Command:   func(env Env, cfg any) (Command, error) { return d.Command(env, cfgOf(cfg)) },
		Metrics:   d.Metrics,
		Helper:    d.Helper,
		Stacks:    d.Stacks,
		Outputs:   d.Outputs,
	}
	if d.Progress != nil {
		k.NewProgress = func(cfgs map[string]any) Progress {
			typed := make(map[string]*C, len(cfgs))
			for name, cfg := range cfgs {
				typed[name] = cfgOf(cfg)
			}
			return d.Progress(typed)
		}
	}
	if d.Validate != nil {
		k.Validate = func(cfg any) error { return d.Validate(cfgOf(cfg)) }
	}
	if d.Endpoints != nil {
		k.Endpoints = func(cfg any) []Endpoint { return d.Endpoints(cfgOf(cfg)) }
	}
	if d.Prepare != nil {
		k.Prepare = func(cfg any, dir string) error { return d.Prepare(cfgOf(cfg), dir) }
	}
	if d.Set != nil {
		k.Set = func(ctx context.Context, env Env, cfg any, change *yaml.Node) error {
			return d.Set(ctx, env, cfgOf(cfg), change)
		}
	}
	if d.Overrun != nil {
		k.Overrun = func(cfg any) time.Duration { return d.Overrun(cfgOf(cfg)) }
	}
	register(k)
}

// EndpointsOf is k's endpoints for cfg (none when the kind declares none).
func (k *Kind) EndpointsOf(cfg any) []Endpoint {
	if k == nil || k.Endpoints == nil {
		return nil
	}
	return k.Endpoints(cfg)
}

// OverrunOf is how long an instance of k may run past the run's duration.
func (k *Kind) OverrunOf(cfg any) time.Duration {
	if k == nil || k.Overrun == nil {
		return DefaultOverrun
	}
	return k.Overrun(cfg)
}

// Component returns component instance name, or an error listing the components there are.
func (env Env) Component(name string) (Component, error) {
	if c, ok := env.Components[name]; ok {
		return c, nil
	}
	names := make([]string, 0, len(env.Components))
	for n := range env.Components {
		names = append(names, n)
	}
	sort.Strings(names)
	return Component{}, fmt.Errorf("unknown component %q (components: %s)", name, strings.Join(names, ", "))
}

// Endpoint finds where a workload reaches component name: the first of its endpoints that
// speaks one of protocols (or, with port > 0, the endpoint on that port, which must speak one
// of them when the component declares it). It returns the component's node name, which every
// node resolves, and the endpoint; the error names what the component serves instead.
func (env Env) Endpoint(name string, port int, protocols ...string) (string, Endpoint, error) {
	c, err := env.Component(name)
	if err != nil {
		return "", Endpoint{}, err
	}
	speaks := func(p string) bool {
		for _, want := range protocols {
			if p == want {
				return true
			}
		}
		return false
	}
	for _, ep := range c.Endpoints {
		if port > 0 && ep.Port != port {
			continue
		}
		if speaks(ep.Protocol) {
			return c.Node, ep, nil
		}
	}
	// An endpoint that says only "tcp" (an image's EXPOSE, a Compose port) serves some protocol
	// over TCP: a workload that speaks one protocol takes the first such, as it would take the
	// port a scenario names for a component that declares nothing. Asked for several, it cannot
	// tell which one is spoken there.
	for _, ep := range c.Endpoints {
		if (port > 0 && ep.Port != port) || ep.Protocol != ProtocolTCP || !tcpBased(protocols) {
			continue
		}
		if len(protocols) > 1 {
			return "", Endpoint{}, fmt.Errorf("component %q (kind %s): its endpoint %s on port %d says only tcp, not which of %s it speaks: declare its endpoints with their protocol",
				name, c.Kind, ep.Name, ep.Port, strings.Join(protocols, ", "))
		}
		ep.Protocol = protocols[0]
		return c.Node, ep, nil
	}
	if port > 0 && len(c.Endpoints) == 0 {
		// A component that declares nothing: trust the scenario's port.
		return c.Node, Endpoint{Name: "port", Protocol: protocols[0], Port: port}, nil
	}
	var serves []string
	for _, ep := range c.Endpoints {
		serves = append(serves, fmt.Sprintf("%s on %d", ep.Protocol, ep.Port))
	}
	what := "serves " + strings.Join(serves, ", ")
	if len(serves) == 0 {
		what = "declares no endpoints"
	}
	if port > 0 {
		return "", Endpoint{}, fmt.Errorf("component %q (kind %s) has no %s endpoint on port %d: it %s",
			name, c.Kind, strings.Join(protocols, " or "), port, what)
	}
	return "", Endpoint{}, fmt.Errorf("component %q (kind %s) has no %s endpoint: it %s",
		name, c.Kind, strings.Join(protocols, " or "), what)
}
