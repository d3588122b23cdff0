package httptarget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// Endpoint is one named URL; each is a series.
type Endpoint struct {
	Name string
	URL  string
}

// Config is `continuum load http`'s configuration.
type Config struct {
	Load      loadgen.Config
	Endpoints []Endpoint
	Method    string // default GET
	BodySize  int    // bytes of pseudo-random body sent with every request
	Seed      int64  // seeds the body content, so runs are reproducible byte for byte
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
		t, err := NewTarget(method, e.URL, body, cfg.Load.Timeout, conns)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", e.Name, err)
		}
		defer t.Close()
		series = append(series, loadgen.Series{Name: e.Name, Target: t})
	}
	return loadgen.Run(ctx, cfg.Load, series)
}
