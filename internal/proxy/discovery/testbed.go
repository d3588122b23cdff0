package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/spec"
)

// TestbedKey is the testbed source's key in the proxy configuration's discovery list.
const TestbedKey = "testbed"

func init() { RegisterPlatformSource(TestbedKey, ParseTestbedSource) }

// TestbedConfig configures the testbed source, which reads the service instances of a running
// Continuum testbed (the scenario registry): every supervised process started with a service
// declaration (testbed.ProcSpec.Service; in a scenario, a component's `service:`) is an instance.
//
// In the proxy's YAML it is either the testbed's name, optionally followed by @ and its state
// dir (the address of the testbed's platform endpoint, see PlatformKey), or a mapping:
//
//	discovery:
//	  - testbed: run123-001
//	  - testbed: run123-001@/run/continuum
//	  - testbed: {name: lab, state_dir: /run/continuum, interval: 250ms}
type TestbedConfig struct {
	// Name of the testbed (as in `continuum testbed status --name`).
	Name string `yaml:"name"`
	// StateDir is where the testbed's control socket lives (default $CONTINUUM_STATE_DIR or
	// /run/continuum). The socket is a unix socket on the host's filesystem, which is shared
	// with the nodes, so a proxy inside a node reaches it too.
	StateDir string `yaml:"state_dir"`
	// Interval between two polls of the testbed's status (default 250 ms).
	Interval spec.Duration `yaml:"interval"`
	// LoadMaxAge: node loads sampled longer ago than this are reported as unknown, so a load
	// left over from a stopped sampler never marks a node overloaded (default 5 s).
	LoadMaxAge spec.Duration `yaml:"load_max_age"`
	// Logger receives errors talking to the testbed (default slog.Default()).
	Logger *slog.Logger `yaml:"-"`
}

// DefaultTestbedInterval is the default poll interval: short enough that an instance started,
// killed or overloaded by a scenario event is seen within a few requests at tens of requests/s,
// long enough that polling costs nothing measurable (a status is a few kB of JSON).
const DefaultTestbedInterval = 250 * time.Millisecond

// testbedNameRE is package testbed's rule for testbed names (ValidName; a test keeps them equal).
var testbedNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate checks the name and durations.
func (c TestbedConfig) Validate() error {
	if !testbedNameRE.MatchString(c.Name) {
		return fmt.Errorf("testbed source: invalid testbed name %q: use 1-32 characters a-z, 0-9 and '-', starting with a letter or digit", c.Name)
	}
	if c.Interval.Duration < 0 || c.LoadMaxAge.Duration < 0 {
		return errors.New("testbed source: interval and load_max_age must be >= 0")
	}
	return nil
}

// TestbedSource polls a testbed's control socket and turns its status into snapshots.
//
// It speaks the socket's HTTP+JSON (GET /status, package testbed's Status) itself instead of
// importing package testbed: that package carries the whole testbed (fabric, cgroups,
// namespaces), which the proxy binaries, with their memory budget, must not link.
type TestbedSource struct {
	cfg    TestbedConfig
	client *http.Client
	sock   string
}

// testbedStatus is the part of GET /status this source reads.
type testbedStatus struct {
	Nodes []struct {
		Name    string            `json:"name"`
		Address string            `json:"address"`
		Labels  map[string]string `json:"labels"`
		Load    *struct {
			At     time.Time `json:"at"`
			CPU    float64   `json:"cpu"`
			Memory float64   `json:"memory"`
		} `json:"load"`
	} `json:"nodes"`
	Procs []struct {
		Name    string `json:"name"`
		Node    string `json:"node"`
		State   string `json:"state"`
		Service *struct {
			Name       string            `json:"name"`
			Port       int               `json:"port"`
			Attributes map[string]string `json:"attributes"`
		} `json:"service"`
	} `json:"processes"`
}

// defaultTestbedStateDir is package testbed's DefaultStateDir (a test keeps them equal).
func defaultTestbedStateDir() string {
	if d := os.Getenv("CONTINUUM_STATE_DIR"); d != "" {
		return d
	}
	return "/run/continuum"
}

// NewTestbedSource returns a source for the testbed cfg names.
func NewTestbedSource(cfg TestbedConfig) (*TestbedSource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval.Duration == 0 {
		cfg.Interval.Duration = DefaultTestbedInterval
	}
	if cfg.LoadMaxAge.Duration == 0 {
		cfg.LoadMaxAge.Duration = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir := cfg.StateDir
	if dir == "" {
		dir = defaultTestbedStateDir()
	}
	src := &TestbedSource{cfg: cfg, sock: filepath.Join(dir, cfg.Name, "control.sock")}
	src.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", src.sock)
		},
		MaxIdleConnsPerHost: 1,
	}}
	return src, nil
}

// status fetches the testbed's status.
func (s *TestbedSource) status(ctx context.Context) (testbedStatus, error) {
	var st testbedStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://testbed/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return st, fmt.Errorf("testbed %q is not answering on %s: %w", s.cfg.Name, s.sock, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("testbed %q: GET /status: %s", s.cfg.Name, resp.Status)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("testbed %q: GET /status: %w", s.cfg.Name, err)
	}
	return st, nil
}

// ParseTestbedSource builds the source from its YAML value: a testbed name (NAME or
// NAME@STATE_DIR), or a mapping with the fields of TestbedConfig.
func ParseTestbedSource(n *yaml.Node) (Source, error) {
	var cfg TestbedConfig
	switch {
	case n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, errors.New("testbed: want a testbed name or {name: NAME, state_dir: DIR, interval: DURATION}")
	case n.Kind == yaml.ScalarNode:
		cfg.Name, cfg.StateDir, _ = strings.Cut(n.Value, "@")
	case n.Kind == yaml.MappingNode:
		if err := spec.DecodeAt("", TestbedKey, n, &cfg); err != nil {
			return nil, err
		}
	default:
		return nil, spec.Errorf("", n, "testbed: want a testbed name or a mapping {name: NAME, state_dir: DIR, interval: DURATION}")
	}
	src, err := NewTestbedSource(cfg)
	if err != nil {
		return nil, spec.Errorf("", n, "%v", err)
	}
	return src, nil
}

// Name identifies the source in logs and /debug/pools.
func (s *TestbedSource) Name() string { return "testbed:" + s.cfg.Name }

// Run polls the testbed every Interval and calls update with the first snapshot and then
// whenever instances or (rounded) node loads change. While the testbed does not answer it keeps
// the last snapshot and retries; it returns nil when ctx ends.
func (s *TestbedSource) Run(ctx context.Context, update func(Snapshot)) error {
	t := time.NewTicker(s.cfg.Interval.Duration)
	defer t.Stop()
	var last *Snapshot
	var failing bool
	for {
		pctx, cancel := context.WithTimeout(ctx, max(s.cfg.Interval.Duration*4, 2*time.Second))
		st, err := s.status(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if !failing {
				s.cfg.Logger.Warn("testbed source: status unavailable; keeping the last snapshot", "testbed", s.cfg.Name, "error", err)
				failing = true
			}
		default:
			if failing {
				s.cfg.Logger.Info("testbed source: status available again", "testbed", s.cfg.Name)
				failing = false
			}
			snap := testbedSnapshot(st, time.Now(), s.cfg.LoadMaxAge.Duration)
			if last == nil || !reflect.DeepEqual(*last, snap) {
				update(snap)
				last = &snap
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// testbedSnapshot converts a testbed status into a snapshot: one instance per process that
// declares a service (ID = process name, URL = http://<node address>:<port>, Ready while the
// process runs, attributes = the node's labels overridden by the service's own attributes),
// and the load of every node sampled within maxAge of now, rounded to 1% so that noise does
// not count as a change. Instances are sorted by ID.
func testbedSnapshot(st testbedStatus, now time.Time, maxAge time.Duration) Snapshot {
	addrs := map[string]string{}
	labels := map[string]map[string]string{}
	snap := Snapshot{Instances: []Instance{}}
	for _, n := range st.Nodes {
		addrs[n.Name], labels[n.Name] = n.Address, n.Labels
		if n.Load == nil || now.Sub(n.Load.At) > maxAge {
			continue
		}
		if snap.Nodes == nil {
			snap.Nodes = map[string]NodeLoad{}
		}
		snap.Nodes[n.Name] = NodeLoad{CPU: round2(n.Load.CPU), Memory: round2(n.Load.Memory)}
	}
	for _, p := range st.Procs {
		if p.Service == nil {
			continue
		}
		inst := Instance{ID: p.Name, Service: p.Service.Name, Node: p.Node, Ready: p.State == "running",
			URL: "http://" + net.JoinHostPort(addrs[p.Node], strconv.Itoa(p.Service.Port))}
		if len(labels[p.Node])+len(p.Service.Attributes) > 0 {
			inst.Attributes = map[string]string{}
			for k, v := range labels[p.Node] {
				inst.Attributes[k] = v
			}
			for k, v := range p.Service.Attributes {
				inst.Attributes[k] = v
			}
		}
		snap.Instances = append(snap.Instances, inst)
	}
	sort.Slice(snap.Instances, func(i, j int) bool { return snap.Instances[i].ID < snap.Instances[j].ID })
	return snap
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
