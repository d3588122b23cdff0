package kinds

import (
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

// route is the route the users take; its error is a kind.FieldErrors naming the key at fault.
func (c *UsersConfig) route() (Route, error) {
	var errs kind.FieldErrors
	switch {
	case c.Send != "" || c.Subscribe != "":
		switch {
		case len(c.Routes) > 0:
			errs.Add("routes", "", "name either send and subscribe or routes, not both")
		case c.Send == "":
			errs.Add("send", "--send-url", "required with subscribe: the component users send to (realtime-db or stream-bridge)")
		case c.Subscribe == "":
			errs.Add("subscribe", "--subscribe-url", "required with send: the component the subscriber listens to (realtime-db or kafka)")
		default:
			return Route{Send: c.Send, Subscribe: c.Subscribe}, nil
		}
	case len(c.Routes) > 0:
		r, ok := c.Routes[c.Architecture]
		switch {
		case !ok:
			names := make([]string, 0, len(c.Routes))
			for n := range c.Routes {
				names = append(names, n)
			}
			sort.Strings(names)
			errs.Add("architecture", "", "%q: no such route (routes: %s)", c.Architecture, strings.Join(names, ", "))
		case r.Send == "" || r.Subscribe == "":
			errs.Add("routes."+c.Architecture, "", "send and subscribe are both required")
		default:
			return r, nil
		}
	default:
		errs.Add("send", "--send-url", "name the route: send and subscribe (components), or routes with one per architecture")
	}
	return Route{}, errs.Err()
}

// validate reports every problem at once, each with its key and the `continuum stream users`
// flag it becomes; streamload's own Validate then checks the rest with placeholders for what
// the route's kinds decide when the run starts (reported at config).
func (c *UsersConfig) validate() error {
	var errs kind.FieldErrors
	archOK := c.Architecture != "" && !strings.ContainsAny(c.Architecture, "/ ")
	if !archOK {
		errs.Add("architecture", "", "%q: required, a name without / or spaces (%s, %s, %s)", c.Architecture,
			ArchCloudOnly, ArchEdgeOnly, ArchEdgeCloud)
	}
	// With routes, the architecture picks one: a bad architecture is reported once, above.
	if _, err := c.route(); err != nil && (archOK || len(c.Routes) == 0) {
		errs.AddErr("", "", err)
	}
	if p := c.Path; !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") && p != "/" || strings.ContainsAny(p, ".$#[]") {
		errs.Add("path", "--path", "%q: must start with /, not end with / (but the root), and not contain . $ # [ ]", p)
	}
	if c.Users < 1 || c.Users > 100000 {
		errs.Add("users", "--users", "%d: must be between 1 and 100000", c.Users)
	}
	if c.Requests < 1 || c.Requests > 10000000 {
		errs.Add("requests", "--requests", "%d: must be between 1 and 10000000 per user", c.Requests)
	} else if n := int64(c.Users) * int64(c.Requests); n > 50000000 {
		errs.Add("requests", "--requests", "users x requests = %d: at most 50000000 records per run", n)
	}
	for _, d := range []struct {
		key, flag string
		v         spec.Duration
	}{{"interval", "--interval", c.Interval}, {"interval_sd", "--interval-sd", c.IntervalSD}, {"grace", "--grace", c.Grace}} {
		if d.v.Duration < 0 {
			errs.Add(d.key, d.flag, "%v: must be >= 0", d.v)
		}
	}
	if c.Timeout.Duration <= 0 {
		errs.Add("timeout", "--timeout", "%v: must be > 0", c.Timeout)
	}
	if c.Payload < streamload.MinPayload || c.Payload > 16<<20 {
		errs.Add("payload", "--payload", "%d bytes: must be between %d and %d (16 MiB)", c.Payload, streamload.MinPayload, 16<<20)
	}
	if len(errs) > 0 {
		return errs.Err()
	}
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
