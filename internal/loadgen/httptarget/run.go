package httptarget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// Endpoint is one named URL; each is a series.
type Endpoint struct {
	Name string
	URL  string
	// Host and Service address a service behind Continuum's proxy: the Host header, and the
	// X-Continuum-Service header. Both optional.
	Host    string
	Service string
}

// Config is `continuum load http`'s configuration.
type Config struct {
	Load      loadgen.Config
	Endpoints []Endpoint
	Method    string // default GET
	BodySize  int    // bytes of pseudo-random body sent with every request
	Seed      int64  // seeds the body content, so runs are reproducible byte for byte
	// InstanceHeader names the response header that says which instance served a request
	// (default X-Continuum-Instance); results count requests per instance when answers carry it.
	InstanceHeader string
	// NewConnections sends every request on a new TCP connection (no keep-alive), as a client
	// that does not reuse connections: a balancer that picks a backend per connection
	// (kube-proxy) then picks one per request. Response times include the connection's set-up.
	NewConnections bool
}

// Validate checks what loadgen does not.
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("no target: give at least one --target NAME=URL")
	}
	if c.BodySize < 0 || c.BodySize > 64<<20 {
		return fmt.Errorf("body_size %d: must be between 0 and 64 MiB", c.BodySize)
	}
	m := c.Method
	if m != "" && (strings.ToUpper(m) != m || strings.ContainsAny(m, " \t/")) {
		return fmt.Errorf("method %q: want an upper-case HTTP method such as GET, POST or PUT", m)
	}
	for _, e := range c.Endpoints {
		if err := checkURL(e.URL); err != nil {
			return fmt.Errorf("target %q: %w", e.Name, err)
		}
		if err := checkHeaderValue("host", e.Host); err != nil {
			return fmt.Errorf("target %q: %w", e.Name, err)
		}
		if err := checkHeaderValue("service", e.Service); err != nil {
			return fmt.Errorf("target %q: %w", e.Name, err)
		}
	}
	if h := c.InstanceHeader; h != "" && !httpguts.ValidHeaderFieldName(h) {
		return fmt.Errorf("instance header %q: not a valid HTTP header name", h)
	}
	return c.Load.Validate()
}

// Run loads every endpoint as its own series and writes the results (see loadgen.Run).
func Run(ctx context.Context, cfg Config) (*loadgen.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	method := cfg.Method
	if method == "" {
		method = http.MethodGet
	}
	var body []byte
	if cfg.BodySize > 0 {
		body = make([]byte, cfg.BodySize)
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x636f6e74))
		for i := range body {
			body[i] = byte('a' + rng.IntN(26))
		}
	}
	conns := cfg.Load.MaxInflight
	if conns == 0 {
		conns = loadgen.DefaultConfig().MaxInflight
	}
	if cfg.Load.Clients > 0 {
		conns = cfg.Load.Clients
	}
	series := make([]loadgen.Series, 0, len(cfg.Endpoints))
	for _, e := range cfg.Endpoints {
		t, err := NewTargetWith(method, e.URL, body, cfg.Load.Timeout, conns,
			RequestOptions{Host: e.Host, Service: e.Service, InstanceHeader: cfg.InstanceHeader, NewConnections: cfg.NewConnections})
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", e.Name, err)
		}
		defer t.Close()
		series = append(series, loadgen.Series{Name: e.Name, Target: t})
	}
	return loadgen.Run(ctx, cfg.Load, series)
}

// checkHeaderValue rejects values that cannot be sent as a header (and so would fail every
// request): control characters, spaces inside a host or service name.
func checkHeaderValue(field, v string) error {
	if v == "" {
		return nil
	}
	if !httpguts.ValidHeaderFieldValue(v) || strings.ContainsAny(v, " \t/") {
		return fmt.Errorf("%s %q: want a host or service name without spaces, '/' or control characters", field, v)
	}
	return nil
}

// ApplyPerTarget applies flag values of the form VALUE (every endpoint) or TARGET=VALUE (the
// endpoint named TARGET) with set; flag names the flag in errors.
func ApplyPerTarget(eps []Endpoint, flag string, values []string, set func(*Endpoint, string)) error {
	for _, v := range values {
		name, val, scoped := strings.Cut(v, "=")
		if !scoped {
			for i := range eps {
				set(&eps[i], v)
			}
			continue
		}
		found := false
		for i := range eps {
			if eps[i].Name == name {
				set(&eps[i], val)
				found = true
			}
		}
		if !found {
			names := make([]string, len(eps))
			for i, e := range eps {
				names[i] = e.Name
			}
			return fmt.Errorf("%s %s: no target named %q (targets: %s)", flag, v, name, strings.Join(names, ", "))
		}
	}
	return nil
}
