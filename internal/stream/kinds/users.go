package kinds

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/stream/streamcmd"
	"github.com/continuum-project/continuum/internal/stream/streamload"
)

// The workload "stream-users": seeds/003's users and subscriber (`continuum stream users`,
// package streamload) between components of the scenario. Which components it sends to and
// listens to is its route; a route's kinds decide the protocols: a realtime-db is sent to with
// REST PUTs and listened to with SSE, a stream-bridge is POSTed to, a kafka is consumed.

func init() {
	kind.Register(kind.Def[UsersConfig]{
		Name:     "stream-users",
		System:   "stream",
		Role:     kind.RoleWorkload,
		Summary:  "Carpio et al.'s users: U users x R records (Normal inter-arrival) to a realtime-db or stream-bridge, a subscriber (realtime-db SSE or Kafka consumer) timing each end to end; series e2e, ack",
		Defaults: defaultUsers,
		Validate: (*UsersConfig).validate,
		Command:  usersCommand,
		Overrun: func(c *UsersConfig) time.Duration {
			return c.Grace.Duration + c.Timeout.Duration + 30*time.Second
		},
		Metrics:  usersMetrics,
		Progress: usersProgress,
	})
}

// Architectures the report compares (seeds/003 Fig. 2).
const (
	ArchCloudOnly = "cloud-only"
	ArchEdgeOnly  = "edge-only"
	ArchEdgeCloud = "edge-cloud"
)

// Route is where the users send (a realtime-db or a stream-bridge component) and what the
// subscriber listens to (a realtime-db or a kafka component).
type Route struct {
	Send      string `yaml:"send"`
	Subscribe string `yaml:"subscribe"`
}

// UsersConfig is the `config:` of a stream-users workload.
type UsersConfig struct {
	// Architecture names the path measured (cloud-only, edge-only, edge-cloud); the report
	// compares architectures by it.
	Architecture string `yaml:"architecture"`
	// Send and Subscribe are the route; or Routes names one per architecture and Architecture
	// picks it (a scenario that sweeps the architecture deploys every component once).
	Send      string           `yaml:"send,omitempty"`
	Subscribe string           `yaml:"subscribe,omitempty"`
	Routes    map[string]Route `yaml:"routes,omitempty"`

	Users      int           `yaml:"users"`
	Requests   int           `yaml:"requests"`
	Interval   spec.Duration `yaml:"interval"`
	IntervalSD spec.Duration `yaml:"interval_sd"`
	Payload    spec.Bytes    `yaml:"payload"`
	Topic      string        `yaml:"topic"`
	Path       string        `yaml:"path"`
	NS         string        `yaml:"ns"`
	Timeout    spec.Duration `yaml:"timeout"`
	Grace      spec.Duration `yaml:"grace"`
	Verify     bool          `yaml:"verify"`
}

func defaultUsers() *UsersConfig {
	d := streamcmd.DefaultUsersFlags().Config
	return &UsersConfig{Users: d.Users, Requests: d.Requests, Interval: spec.Duration{Duration: d.Interval},
		IntervalSD: spec.Duration{Duration: d.IntervalSD}, Payload: spec.Bytes(d.Payload), Topic: d.Topic,
		Path: d.Path, NS: d.NS, Timeout: spec.Duration{Duration: d.Timeout}, Grace: spec.Duration{Duration: d.Grace}}
}

func (c *UsersConfig) route() (Route, error) {
	switch {
	case c.Send != "" || c.Subscribe != "":
		if len(c.Routes) > 0 {
			return Route{}, errors.New("name either send and subscribe or routes, not both")
		}
		if c.Send == "" || c.Subscribe == "" {
			return Route{}, errors.New("send and subscribe are both required: the component users send to (realtime-db or stream-bridge) and the one the subscriber listens to (realtime-db or kafka)")
		}
		return Route{Send: c.Send, Subscribe: c.Subscribe}, nil
	case len(c.Routes) > 0:
		r, ok := c.Routes[c.Architecture]
		if !ok {
			names := make([]string, 0, len(c.Routes))
			for n := range c.Routes {
				names = append(names, n)
			}
			sort.Strings(names)
			return Route{}, fmt.Errorf("architecture %q: no such route (routes: %s)", c.Architecture, strings.Join(names, ", "))
		}
		if r.Send == "" || r.Subscribe == "" {
			return Route{}, fmt.Errorf("routes.%s: send and subscribe are both required", c.Architecture)
		}
		return r, nil
	}
	return Route{}, errors.New("name the route: send and subscribe (components), or routes with one per architecture")
}

func (c *UsersConfig) validate() error {
	if c.Architecture == "" || strings.ContainsAny(c.Architecture, "/ ") {
		return fmt.Errorf("architecture %q: required, a name without / or spaces (%s, %s, %s)", c.Architecture,
			ArchCloudOnly, ArchEdgeOnly, ArchEdgeCloud)
	}
	if _, err := c.route(); err != nil {
		return err
	}
	// The protocols depend on the route's kinds, known when the run starts: check the rest
	// with placeholders.
	cfg := c.loadConfig(streamload.SendREST, "http://send:1", streamload.SubscribeSSE, "http://sub:1", nil, time.Hour, 0, 1, "")
	return cfg.Validate()
}

func (c *UsersConfig) loadConfig(send, sendURL, sub, subURL string, brokers []string, d, warmup time.Duration, seed int64, out string) streamload.Config {
	return streamload.Config{Send: send, SendURL: sendURL, Subscribe: sub, SubscribeURL: subURL, Brokers: brokers,
		Path: c.Path, NS: c.NS, Topic: c.Topic, Users: c.Users, Requests: c.Requests, Interval: c.Interval.Duration,
		IntervalSD: c.IntervalSD.Duration, Payload: int(c.Payload), Timeout: c.Timeout.Duration, Grace: c.Grace.Duration,
		Verify: c.Verify, Duration: d, Warmup: warmup, Seed: seed, OutDir: out}
}

func usersCommand(env kind.Env, c *UsersConfig) (kind.Command, error) {
	r, err := c.route()
	if err != nil {
		return kind.Command{}, err
	}
	url := func(name string) (string, error) {
		node, ep, err := env.Endpoint(name, 0, kind.ProtocolHTTP)
		if err != nil {
			return "", err
		}
		return "http://" + net.JoinHostPort(env.NodeHost(node), strconv.Itoa(ep.Port)), nil
	}
	sendComp, err := env.Component(r.Send)
	if err != nil {
		return kind.Command{}, fmt.Errorf("send: %w", err)
	}
	var send string
	switch sendComp.Kind {
	case "realtime-db":
		send = streamload.SendREST
	case "stream-bridge":
		send = streamload.SendBridge
	default:
		return kind.Command{}, fmt.Errorf("send: component %q is a %s; users send to a realtime-db or a stream-bridge", r.Send, sendComp.Kind)
	}
	sendURL, err := url(r.Send)
	if err != nil {
		return kind.Command{}, fmt.Errorf("send: %w", err)
	}
	subComp, err := env.Component(r.Subscribe)
	if err != nil {
		return kind.Command{}, fmt.Errorf("subscribe: %w", err)
	}
	var sub, subURL string
	var brokers []string
	switch subComp.Kind {
	case "realtime-db":
		sub = streamload.SubscribeSSE
		if subURL, err = url(r.Subscribe); err != nil {
			return kind.Command{}, fmt.Errorf("subscribe: %w", err)
		}
	case "kafka":
		sub = streamload.SubscribeKafka
		st, err := env.Store(r.Subscribe, 0, kind.ProtocolKafka)
		if err != nil {
			return kind.Command{}, fmt.Errorf("subscribe: %w", err)
		}
		node, port, _ := net.SplitHostPort(st.Addr)
		brokers = []string{net.JoinHostPort(env.NodeHost(node), port)}
	default:
		return kind.Command{}, fmt.Errorf("subscribe: component %q is a %s; the subscriber listens to a realtime-db or consumes a kafka", r.Subscribe, subComp.Kind)
	}
	f := streamcmd.DefaultUsersFlags()
	f.Config = c.loadConfig(send, sendURL, sub, subURL, brokers, env.Duration, env.Warmup, env.Seed, env.OutDir)
	if send == streamload.SendBridge {
		// The bridge's token, which it wrote into its own output directory before it listened
		// (the run starts workloads once components are ready): env.OutDir is the run's
		// workloads/<name>, the bridge's is components/<bridge>.
		runDir := filepath.Dir(filepath.Dir(env.OutDir))
		f.Config.SendTokenFile = BridgeTokenFile(results.ComponentDir(runDir, r.Send))
	}
	if err := f.Config.Validate(); err != nil {
		return kind.Command{}, err
	}
	return kind.Command{Args: append([]string{env.Binary, "stream", "users"}, cli.Args(streamcmd.DefaultUsersFlags(), f)...)}, nil
}
