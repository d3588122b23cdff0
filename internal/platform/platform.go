package platform

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"syscall"
	"time"
)

// Provider is one kind of place where scenarios run (the testbed, a Kubernetes cluster). The
// wiring (cmd/continuum) picks it; the runner asks it to check a scenario before anything
// starts, then brings one Platform up per run and takes it down again.
type Provider interface {
	// Check rejects, before anything starts, what this provider cannot run as written: a fault
	// action or fault field it cannot apply, a topology feature it does not have. The error
	// names the fault (or feature) and the platform, e.g. "platform kubernetes cannot apply
	// fault pause (node edge1)". faults are the scenario's fault events, Action set.
	Check(topo *Topology, faults []Fault) error
	// Endpoint is the endpoint (see Endpoint) the platform Up brings up under name will have.
	// The runner hands it to components without starting anything (`continuum run --check`
	// builds every command line with it).
	Endpoint(name string) string
	// Up brings cfg.Topology up. On error nothing it created is left behind.
	Up(ctx context.Context, cfg Config) (Platform, error)
}

// Config is what Provider.Up needs from the runner; where to put state, which cluster or
// namespace to use are the provider's own settings.
type Config struct {
	// Name is unique among the platforms running at once (run.json records it).
	Name     string
	Topology *Topology
	// Seed seeds the platform's random draws (link loss and jitter) so that runs repeat.
	Seed int64
	// Binary is the continuum binary instances run (a platform may use it to enter nodes).
	Binary string
	// Dir is the run's results directory on the runner's host (absolute): instances' output
	// directories, log directory and data directories are under it. A platform whose nodes do
	// not share the host's filesystem gives them a writable directory at that path.
	Dir    string
	Logger *slog.Logger // nil: discard
}

// Platform is a running topology, the runner's only handle on where its instances run. Its
// methods are called from several goroutines at once (the event scheduler applies faults and
// starts deferred components while the sampler runs).
type Platform interface {
	// NodeAddrs maps every node of the topology to the address instances on other nodes reach
	// it at. A node's name also resolves to that address inside every node.
	NodeAddrs() map[string]string
	// Start starts an instance and returns once it runs (not once it is ready: the runner waits
	// for that with Dial). The instance keeps running until it exits, Stop, or Down.
	Start(ctx context.Context, spec InstanceSpec) (Instance, error)
	// Dial opens a connection from inside node, as an instance there would (readiness checks,
	// a kind's run-time changes).
	Dial(ctx context.Context, node, network, addr string) (net.Conn, error)
	// Apply applies a fault (a scenario event) and returns what it did, for events.csv.
	Apply(ctx context.Context, f Fault) (detail string, err error)
	// Sample measures every node and instance, once at the start and then every interval, and
	// passes each round to emit (never concurrently) until ctx ends; it returns after its last
	// emit. Rows of instances name them by InstanceSpec.Name.
	Sample(ctx context.Context, interval time.Duration, emit func([]Sample))
	// Down stops every instance (SIGTERM, then SIGKILL after a short grace) and removes
	// everything Up created. It is idempotent and keeps going past errors.
	Down() error
}

// Instance is a started instance.
type Instance interface {
	// Done is closed when the instance has exited.
	Done() <-chan struct{}
	// Exit says how it exited; it is final once Done is closed.
	Exit() Exit
	// Stop asks the instance to exit (SIGTERM, so it can write what it measured), waits up to
	// grace, then kills it and everything it started; it returns once it has exited.
	Stop(grace time.Duration) error
}

// Exit is how an instance exited.
type Exit struct {
	Code   int    // its exit code; -1 when a signal killed it
	Signal string // the signal that killed it ("killed"), "" when it exited by itself
}

// InstanceSpec describes an instance to start on a node: one process (and what it starts).
//
// Paths (Dir, LogDir, DataDirs and the output paths in Args) are paths of the runner's host. A
// platform whose nodes do not share that filesystem must make them appear there: what an
// instance writes under them is on the host by the time its Done is closed.
type InstanceSpec struct {
	// Name is unique within the platform; fault events (kill, restart) and sample rows name
	// the instance by it.
	Name string
	Node string
	// Args[0] is the program: an absolute path or a name looked up in the node's PATH.
	Args []string
	Env  []string // KEY=VALUE entries added to the instance's environment
	Dir  string   // working directory
	// LogDir receives the instance's stdout and stderr at LogPath(LogDir, Node, Name, stream).
	LogDir string
	// DataDirs are reported as the instance's disk usage (Sample.Disk).
	DataDirs []string
	// CPUs, if > 0, limits the instance and what it starts to that many cores, inside its
	// node's own limit.
	CPUs float64
	// Memory, if > 0, limits the instance and what it starts to that many bytes of memory,
	// inside its node's own limit.
	Memory int64
	// StopSignal is what Instance.Stop sends first (0: SIGTERM); SIGKILL follows after the grace.
	StopSignal syscall.Signal
	// Service, if set, declares the instance an instance of a service, discoverable through
	// the platform (see Endpoint).
	Service *Service
	// Image, if set, says the instance is a container of that image (see Image): a platform
	// that runs images itself runs it and ignores Args.
	Image *Image
	// ExecIn, if set, says the instance is a command run inside another instance's container
	// (see Exec): a platform that runs images itself runs it there and ignores Args.
	ExecIn *Exec
	// Stdout, if set, also receives the instance's stdout as it is written (the runner parses
	// workloads' progress lines from it).
	Stdout io.Writer
}

// LogPath is where an instance's output stream ("stdout" or "stderr") is kept:
// <dir>/<node>.<name>.<stream>.log.
func LogPath(dir, node, name, stream string) string {
	return filepath.Join(dir, node+"."+name+"."+stream+".log")
}
