package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/spec"
)

// The HTTP kinds: "http-echo" runs `continuum echo` (package httpecho) and "http-load" runs
// `continuum load http` (package loadgen/httptarget) against URLs or http-echo instances.
func init() {
	Register(&Kind{
		Name:      "http-echo",
		Role:      RoleComponent,
		Summary:   "HTTP echo server with a processing delay, CPU work and response size changeable at run time",
		NewConfig: func() any { return &HTTPEchoConfig{Port: 8080} },
		Validate:  func(cfg any) error { return cfg.(*HTTPEchoConfig).validate() },
		Command:   httpEchoCommand,
		Set:       httpEchoSet,
	})
	Register(&Kind{
		Name:    "http-load",
		Role:    RoleWorkload,
		Summary: "HTTP load generator: open loop at a fixed rate or closed loop with N clients per target",
		NewConfig: func() any {
			return &HTTPLoadConfig{Timeout: spec.Duration{Duration: time.Second}, Method: http.MethodGet}
		},
		Validate: func(cfg any) error { return cfg.(*HTTPLoadConfig).validate() },
		Command:  httpLoadCommand,
	})
}

// HTTPEchoConfig is the `config:` of an http-echo component.
type HTTPEchoConfig struct {
	Port         int           `yaml:"port"`          // default 8080
	Delay        spec.Duration `yaml:"delay"`         // processing delay per request
	CPUWork      spec.Duration `yaml:"cpu_work"`      // CPU time burnt per request
	ResponseSize spec.Bytes    `yaml:"response_size"` // exact body size; 0 = a short message
}

// Limits mirror httpecho.Settings.Validate, checked here so a scenario fails at load time.
const (
	echoMaxDelay        = 10 * time.Minute
	echoMaxCPUWork      = time.Minute
	echoMaxResponseSize = 64 << 20
)

func (c *HTTPEchoConfig) validate() error {
	switch {
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("port %d: must be between 1 and 65535", c.Port)
	case c.Delay.Duration < 0 || c.Delay.Duration > echoMaxDelay:
		return fmt.Errorf("delay %v: must be between 0s and %v", c.Delay, echoMaxDelay)
	case c.CPUWork.Duration < 0 || c.CPUWork.Duration > echoMaxCPUWork:
		return fmt.Errorf("cpu_work %v: must be between 0s and %v", c.CPUWork, echoMaxCPUWork)
	case c.ResponseSize < 0 || c.ResponseSize > echoMaxResponseSize:
		return fmt.Errorf("response_size %d: must be between 0 and 64Mi bytes", c.ResponseSize)
	}
	return nil
}

func httpEchoCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*HTTPEchoConfig)
	port := strconv.Itoa(c.Port)
	return Command{
		Args: []string{env.Binary, "echo", "--listen", ":" + port,
			"--delay", c.Delay.String(), "--cpu-work", c.CPUWork.String(),
			"--response-size", strconv.FormatInt(int64(c.ResponseSize), 10),
			"--name", env.Instance},
		ReadyAddr: "127.0.0.1:" + port,
	}, nil
}

// httpEchoChange is what a "set" event may change; pointers tell absent fields from zeros.
type httpEchoChange struct {
	Delay        *spec.Duration `yaml:"delay"`
	CPUWork      *spec.Duration `yaml:"cpu_work"`
	ResponseSize *spec.Bytes    `yaml:"response_size"`
}

// httpEchoSet sends the change to the instance's PUT /admin/config, from inside its node.
func httpEchoSet(ctx context.Context, env Env, cfg any, change *yaml.Node) error {
	c := cfg.(*HTTPEchoConfig)
	var ch httpEchoChange
	if err := spec.DecodeAt("", "config", change, &ch); err != nil {
		return fmt.Errorf("http-echo %s: %w", env.Instance, err)
	}
	body := map[string]any{}
	next := *c
	if ch.Delay != nil {
		body["delay"], next.Delay = ch.Delay.String(), *ch.Delay
	}
	if ch.CPUWork != nil {
		body["cpu_work"], next.CPUWork = ch.CPUWork.String(), *ch.CPUWork
	}
	if ch.ResponseSize != nil {
		body["response_size"], next.ResponseSize = int64(*ch.ResponseSize), *ch.ResponseSize
	}
	if len(body) == 0 {
		return fmt.Errorf("http-echo %s: set needs at least one of delay, cpu_work, response_size", env.Instance)
	}
	if err := next.validate(); err != nil {
		return fmt.Errorf("http-echo %s: %w", env.Instance, err)
	}
	addr, ok := env.Nodes[env.Node]
	if !ok {
		return fmt.Errorf("http-echo %s: node %q has no address", env.Instance, env.Node)
	}
	payload, _ := json.Marshal(body)
	u := "http://" + net.JoinHostPort(addr, strconv.Itoa(c.Port)) + "/admin/config"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	dial := env.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("http-echo %s: PUT %s: %w", env.Instance, u, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("http-echo %s: PUT %s: %s: %s", env.Instance, u, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// HTTPLoadConfig is the `config:` of an http-load workload.
type HTTPLoadConfig struct {
	Targets     []HTTPLoadTarget `yaml:"targets"`
	Rate        float64          `yaml:"rate"`    // open loop: requests/s per target
	Clients     int              `yaml:"clients"` // closed loop: clients per target
	Timeout     spec.Duration    `yaml:"timeout"` // default 1s
	Method      string           `yaml:"method"`  // default GET
	BodySize    spec.Bytes       `yaml:"body_size"`
	MaxInflight int              `yaml:"max_inflight"` // 0: loadgen's default
	// QoSLatency is a response-time requirement: stats and summary report per series the share
	// of requests that succeeded within it ("qos" metric). 0: none.
	QoSLatency spec.Duration `yaml:"qos_latency,omitempty"`
}

// HTTPLoadTarget is one series: a URL, or a component reached at http://<its node>:<port><path>.
type HTTPLoadTarget struct {
	Name      string `yaml:"name"`
	URL       string `yaml:"url,omitempty"`
	Component string `yaml:"component,omitempty"`
	Port      int    `yaml:"port,omitempty"` // default: the component's own port (see servicePort), else 8080
	Path      string `yaml:"path,omitempty"` // default "/"
	// Service and Host address a service behind a proxy component (kind proxy): the
	// X-Continuum-Service header and the Host header. Answers naming their instance
	// (X-Continuum-Instance) are counted per instance.
	Service string `yaml:"service,omitempty"`
	Host    string `yaml:"host,omitempty"`
}

func (c *HTTPLoadConfig) validate() error {
	switch {
	case c.Rate < 0 || c.Clients < 0:
		return errors.New("rate and clients must be >= 0")
	case (c.Rate > 0) == (c.Clients > 0):
		return errors.New("exactly one of rate (open loop, requests/s per target) and clients (closed loop) must be > 0")
	case c.Timeout.Duration <= 0 || c.Timeout.Duration > time.Minute:
		return fmt.Errorf("timeout %v: must be > 0 and <= 1m", c.Timeout)
	case c.MaxInflight < 0:
		return fmt.Errorf("max_inflight %d: must be >= 0", c.MaxInflight)
	case c.BodySize < 0 || c.BodySize > 64<<20:
		return fmt.Errorf("body_size %d: must be between 0 and 64Mi bytes", c.BodySize)
	case c.QoSLatency.Duration < 0 || c.QoSLatency.Duration > time.Minute:
		return fmt.Errorf("qos_latency %v: must be between 0s (none) and 1m", c.QoSLatency)
	case c.Method == "" || strings.ToUpper(c.Method) != c.Method || strings.ContainsAny(c.Method, " \t/"):
		return fmt.Errorf("method %q: want an upper-case HTTP method such as GET, POST or PUT", c.Method)
	case len(c.Targets) == 0:
		return errors.New("targets: at least one target ({name, url} or {name, component}) is required")
	}
	seen := map[string]bool{}
	for i, t := range c.Targets {
		where := fmt.Sprintf("targets[%d]", i)
		if err := loadgen.CheckSeriesName(t.Name); err != nil {
			return fmt.Errorf("%s.name: %w", where, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("%s.name %q: used twice", where, t.Name)
		}
		seen[t.Name] = true
		switch {
		case (t.URL == "") == (t.Component == ""):
			return fmt.Errorf("%s (%s): give exactly one of url and component", where, t.Name)
		case t.URL != "" && (t.Port != 0 || t.Path != ""):
			return fmt.Errorf("%s (%s): port and path go with component, not url", where, t.Name)
		case t.Port < 0 || t.Port > 65535:
			return fmt.Errorf("%s.port %d: must be between 1 and 65535", where, t.Port)
		case !headerValueRE.MatchString(t.Service) || !headerValueRE.MatchString(t.Host):
			return fmt.Errorf("%s (%s): service and host must be names without spaces, '/' or control characters", where, t.Name)
		}
		if t.URL != "" {
			u, err := url.Parse(t.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%s.url %q: want http://host[:port]/path", where, t.URL)
			}
		}
	}
	return nil
}

// url returns the target's URL; a component target resolves to its node's name, which every
// node resolves.
func (t HTTPLoadTarget) url(env Env) (string, error) {
	if t.URL != "" {
		return t.URL, nil
	}
	node, err := env.ComponentNode(t.Component)
	if err != nil {
		return "", fmt.Errorf("target %s: %w", t.Name, err)
	}
	port := t.Port
	if sp, ok := env.ComponentConfigs[t.Component].(servicePort); ok && port == 0 {
		port = sp.ServicePort()
	}
	if port == 0 {
		port = 8080
	}
	path := t.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return "http://" + net.JoinHostPort(node, strconv.Itoa(port)) + path, nil
}

func httpLoadCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*HTTPLoadConfig)
	args := []string{env.Binary, "load", "http"}
	for _, t := range c.Targets {
		u, err := t.url(env)
		if err != nil {
			return Command{}, err
		}
		args = append(args, "--target", t.Name+"="+u)
		if t.Service != "" {
			args = append(args, "--service", t.Name+"="+t.Service)
		}
		if t.Host != "" {
			args = append(args, "--host", t.Name+"="+t.Host)
		}
	}
	if c.QoSLatency.Duration > 0 {
		args = append(args, "--qos-latency", c.QoSLatency.String())
	}
	if c.Clients > 0 {
		args = append(args, "--clients", strconv.Itoa(c.Clients))
	} else {
		args = append(args, "--rate", strconv.FormatFloat(c.Rate, 'f', -1, 64))
	}
	args = append(args, "--timeout", c.Timeout.String(), "--method", c.Method,
		"--body-size", strconv.FormatInt(int64(c.BodySize), 10))
	if c.MaxInflight > 0 {
		args = append(args, "--max-inflight", strconv.Itoa(c.MaxInflight))
	}
	args = append(args, "--duration", env.Duration.String(), "--warmup", env.Warmup.String(),
		"--out", env.OutDir, "--seed", strconv.FormatInt(env.Seed, 10))
	return Command{Args: args}, nil
}

// headerValueRE matches what http-load may send as a Host or service header ("" = unset).
var headerValueRE = regexp.MustCompile(`^[A-Za-z0-9._:\[\]-]*$`)

// servicePort is implemented by component configs that serve on one port, so workloads that
// target the component by name find it without repeating the port.
type servicePort interface{ ServicePort() int }

// ServicePort is the port the echo server listens on.
func (c *HTTPEchoConfig) ServicePort() int { return c.Port }
