package kinds

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	proxyconfig "github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/proxycmd"
	"github.com/continuum-project/continuum/internal/spec"
)

// The "proxy" kind runs `continuum proxy` (package proxy) on its node with the run's testbed as
// its discovery source, so every component declaring a `service:` is an instance it can route
// to. The config is the proxy's own `defaults:` and `services:` sections (docs/proxy.md),
// passed through, plus ports and a strategy shortcut for sweeps:
//
//	components:
//	  - name: proxy
//	    kind: proxy
//	    node: worker3
//	    config:
//	      services:
//	        dps: {qos: {latency: 80ms, percentile: 95}}
//	sweep:
//	  components.proxy.config.strategy: [qos, round-robin, "proximity:1.0", "proximity:0.8", random]
func init() {
	kind.Register(kind.Def[ProxyConfig]{
		Name:     "proxy",
		System:   "proxy",
		Role:     kind.RoleComponent,
		Summary:  "continuum proxy: QoS-aware routing to the run's service instances (qos, round-robin, random, proximity)",
		Defaults: func() *ProxyConfig { return &ProxyConfig{Port: 8080, AdminPort: 9090} },
		Validate: (*ProxyConfig).validate,
		Command:  proxyCommand,
		Endpoints: func(c *ProxyConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: c.Port},
				{Name: "admin", Protocol: kind.ProtocolHTTP, Port: c.AdminPort}}
		},
	})
}

// Proxy strategies, as the proxy's configuration names them.
var proxyStrategies = []string{proxyconfig.StrategyQoS, proxyconfig.StrategyRoundRobin, proxyconfig.StrategyRandom, proxyconfig.StrategyProximity}

// ProxyConfig is the `config:` of a proxy component.
type ProxyConfig struct {
	Port      int `yaml:"port"`       // client requests (default 8080)
	AdminPort int `yaml:"admin_port"` // /metrics, /debug/pools, on the node's loopback (default 9090)
	// Strategy, when set, is used by every service, overriding what Defaults and Services say:
	// qos, round-robin, random, proximity, or proximity:ALPHA (proximity with that alpha), so
	// that one sweep path compares all of them.
	Strategy string `yaml:"strategy,omitempty"`
	// Alpha is proximity's alpha for every service, with Strategy (0..1).
	Alpha *float64 `yaml:"alpha,omitempty"`
	// Defaults and Services are the proxy configuration's sections of the same names, passed
	// through (the proxy checks them when it starts).
	Defaults yaml.Node            `yaml:"defaults,omitempty"`
	Services map[string]yaml.Node `yaml:"services,omitempty"`
}

// strategy resolves the shortcut: "proximity:0.8" is proximity with alpha 0.8. Its error is a
// kind.FieldErrors naming the key at fault (strategy or alpha).
func (c *ProxyConfig) strategy() (name string, alpha *float64, err error) {
	fail := func(key, format string, args ...any) (string, *float64, error) {
		var errs kind.FieldErrors
		errs.Add(key, "", format, args...)
		return "", nil, errs.Err()
	}
	if c.Strategy == "" {
		if c.Alpha != nil {
			return fail("alpha", "alpha goes with strategy (proximity)")
		}
		return "", nil, nil
	}
	name, a, hasAlpha := strings.Cut(c.Strategy, ":")
	if !slices.Contains(proxyStrategies, name) {
		return fail("strategy", "%q: want one of %s, or proximity:ALPHA", c.Strategy, strings.Join(proxyStrategies, ", "))
	}
	alpha, alphaKey := c.Alpha, "alpha"
	if hasAlpha {
		v, perr := strconv.ParseFloat(a, 64)
		switch {
		case name != proxyconfig.StrategyProximity:
			return fail("strategy", "%q: only proximity takes an alpha", c.Strategy)
		case perr != nil:
			return fail("strategy", "%q: alpha %q is not a number", c.Strategy, a)
		case c.Alpha != nil && *c.Alpha != v:
			return fail("alpha", "strategy %q and alpha %v disagree", c.Strategy, *c.Alpha)
		}
		alpha, alphaKey = &v, "strategy"
	}
	if alpha != nil && (*alpha < 0 || *alpha > 1) {
		return fail(alphaKey, "alpha %v: must be between 0 and 1", *alpha)
	}
	if alpha != nil && name != proxyconfig.StrategyProximity {
		return fail("alpha", "alpha applies to strategy proximity, not %s", name)
	}
	return name, alpha, nil
}

// validate reports every problem at once, each at its key: the ports with the `continuum proxy`
// flag they become, the rest (which the kind writes into the proxy's configuration file) with
// none; a section the proxy would refuse is reported at the section.
func (c *ProxyConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "--listen", c.Port)
	errs.CheckPort("admin_port", "--admin-listen", c.AdminPort)
	if c.Port == c.AdminPort {
		errs.Add("admin_port", "--admin-listen", "port and admin_port are both %d", c.Port)
	}
	if _, _, err := c.strategy(); err != nil {
		errs.AddErr("", "", err)
	}
	defaultsOK := c.Defaults.Kind == yaml.MappingNode || spec.IsNull(&c.Defaults)
	if !defaultsOK {
		errs.Add("defaults", "", "want a mapping of service settings (strategy, qos, ...)")
	}
	bad := map[string]bool{}
	for _, name := range sortedNames(c.Services) {
		n := c.Services[name]
		if !serviceNameRE.MatchString(name) {
			errs.Add("services."+name, "", "invalid service name; want letters, digits, '-', '_' or '.'")
			bad["services."+name] = true
		} else if n.Kind != yaml.MappingNode && !spec.IsNull(&n) {
			errs.Add("services."+name, "", "want a mapping of service settings (strategy, qos, ...)")
			bad["services."+name] = true
		}
	}
	// Each section is checked as the proxy will read it, so a typo fails the scenario at load
	// time rather than the proxy in the middle of a run.
	for _, sec := range c.sections() {
		if spec.IsNull(sec.node) || bad[sec.path] || sec.path == "defaults" && !defaultsOK {
			continue
		}
		sc := proxyconfig.DefaultServiceConfig()
		if err := spec.DecodeAt("", sec.path, sec.node, &sc); err != nil {
			errs.Add(sec.path, "", "%s", spec.Messages(err))
			continue
		}
		if err := sc.Validate(); err != nil {
			errs.Add(sec.path, "", "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	return errs.Err()
}

// serviceNameRE is what a service may be named here: letters, digits, '-' and '_' (the proxy also
// allows '.', but a name ends up in --set paths, where a dot separates elements).
var serviceNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

type proxySection struct {
	path string
	node *yaml.Node
}

func (c *ProxyConfig) sections() []proxySection {
	var out []proxySection
	if c.Defaults.Kind != 0 {
		out = append(out, proxySection{"defaults", &c.Defaults})
	}
	for _, name := range sortedNames(c.Services) {
		n := c.Services[name]
		out = append(out, proxySection{"services." + name, &n})
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// proxyFile is the configuration file the kind writes for `continuum proxy --config`.
type proxyFile struct {
	Node      string               `yaml:"node"`
	Discovery []map[string]any     `yaml:"discovery"`
	Defaults  *yaml.Node           `yaml:"defaults,omitempty"`
	Services  map[string]yaml.Node `yaml:"services,omitempty"`
}

// proxyConfigFile renders the proxy's configuration for env: discovery from the platform the run
// runs on, and the strategy shortcut applied to the defaults and every service.
func proxyConfigFile(env kind.Env, c *ProxyConfig) ([]byte, error) {
	strategy, alpha, err := c.strategy()
	if err != nil {
		return nil, err
	}
	f := proxyFile{Node: env.Node,
		Discovery: []map[string]any{{discovery.PlatformKey: env.Platform}}}
	override := func(n *yaml.Node) *yaml.Node {
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if n != nil && n.Kind == yaml.MappingNode {
			out = spec.CopyNode(n)
		}
		if strategy != "" {
			spec.SetKey(out, "strategy", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strategy})
		}
		if alpha != nil {
			spec.SetKey(out, "alpha", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(*alpha, 'f', -1, 64)})
		}
		return out
	}
	if c.Defaults.Kind != 0 || strategy != "" {
		f.Defaults = override(&c.Defaults)
	}
	if len(c.Services) > 0 {
		f.Services = map[string]yaml.Node{}
		for name, n := range c.Services {
			f.Services[name] = *override(&n)
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func proxyCommand(env kind.Env, c *ProxyConfig) (kind.Command, error) {
	if env.Platform == "" {
		return kind.Command{}, fmt.Errorf("proxy %s: no platform to discover instances from", env.Instance)
	}
	if err := discovery.CheckPlatform(env.Platform); err != nil {
		return kind.Command{}, fmt.Errorf("proxy %s: %w", env.Instance, err)
	}
	data, err := proxyConfigFile(env, c)
	if err != nil {
		return kind.Command{}, fmt.Errorf("proxy %s: %w", env.Instance, err)
	}
	path := filepath.Join(env.OutDir, "proxy.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return kind.Command{}, fmt.Errorf("proxy %s: %w", env.Instance, err)
	}
	port := strconv.Itoa(c.Port)
	// The admin endpoints listen on the node's loopback: nothing in a run reads them from
	// another node, and the runner's readiness dial and the platform's Dial reach loopback.
	admin := "127.0.0.1:" + strconv.Itoa(c.AdminPort)
	f := proxycmd.Flags{Config: path, Listen: ":" + port, AdminListen: admin, Node: env.Node}
	// Ready once /readyz says every discovery source delivered its first snapshot, not once the
	// port listens: a source that watches an API (a cluster's EndpointSlices) takes a moment,
	// during which the proxy knows no instance and answers 503 (the first 0.9 s of a run of
	// proxy/dynamic.yaml on a cluster, with the port as the probe).
	return kind.Command{Args: append([]string{env.Binary, "proxy"}, cli.Args(proxycmd.Flags{}, f)...),
		Ready: &kind.Ready{HTTP: &kind.HTTPProbe{Addr: admin, Path: "/readyz"}}}, nil
}
