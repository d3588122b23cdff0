package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/spec"
)

// fileConfig is the configuration file's top level; the sections that need more than a
// struct decode are kept as nodes.
type fileConfig struct {
	// Node is this proxy's node (default: the --node flag, else the hostname).
	Node string `yaml:"node"`
	// Listen and AdminListen are the default addresses; the --listen and --admin-listen flags
	// override them.
	Listen            string               `yaml:"listen"`
	AdminListen       string               `yaml:"admin_listen"`
	AdminTokenFile    string               `yaml:"admin_token_file"`
	ShutdownTimeout   spec.Duration        `yaml:"shutdown_timeout"`
	MaxInflight       *int                 `yaml:"max_inflight"`
	ReadHeaderTimeout spec.Duration        `yaml:"read_header_timeout"`
	WriteTimeout      spec.Duration        `yaml:"write_timeout"`
	Discovery         []yaml.Node          `yaml:"discovery"`
	Defaults          yaml.Node            `yaml:"defaults"`
	Services          map[string]yaml.Node `yaml:"services"`
}

// LoadConfig reads the proxy's YAML configuration:
//
//	node: worker3
//	discovery:                     # one or more sources; their snapshots are united
//	  - file: instances.yaml       # relative to this file's directory
//	  - kubernetes: {namespace: default}
//	defaults: {strategy: qos}      # any service key; applies to every service
//	services:
//	  dps:
//	    strategy: qos
//	    timeout: 5s
//	    qos: {latency: 80ms, percentile: 95, require: ["accuracy >= 0.95"]}
//
// Every service starts from DefaultServiceConfig, then `defaults`, then its own section. Each
// discovery entry is a mapping with one key naming a registered source kind
// (discovery.RegisterSource), whose constructor gets the value. Every problem is reported at
// once, each with file:line and what is allowed.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	root, err := spec.ParseFile(path)
	if err != nil {
		return cfg, err
	}
	var fc fileConfig
	if err := spec.Decode(path, root, &fc); err != nil {
		return cfg, err
	}
	var errs spec.Errors
	cfg.Node = fc.Node
	if fc.Listen != "" {
		cfg.Listen = fc.Listen
		if err := checkListen(fc.Listen, false); err != nil {
			errs.Addf(path, spec.Locate(root, "listen"), "listen: %v", err)
		}
	}
	if fc.AdminListen != "" {
		cfg.AdminListen = fc.AdminListen
		if err := checkListen(fc.AdminListen, true); err != nil {
			errs.Addf(path, spec.Locate(root, "admin_listen"), "admin_listen: %v", err)
		}
	}
	if fc.AdminTokenFile != "" {
		cfg.AdminTokenFile = fc.AdminTokenFile
		if !filepath.IsAbs(cfg.AdminTokenFile) {
			cfg.AdminTokenFile = filepath.Join(filepath.Dir(path), cfg.AdminTokenFile)
		}
	}
	if spec.Has(root, "shutdown_timeout") {
		cfg.ShutdownTimeout = fc.ShutdownTimeout.Duration
		if cfg.ShutdownTimeout < 0 {
			errs.Addf(path, spec.Locate(root, "shutdown_timeout"), "shutdown_timeout %v: must be >= 0", fc.ShutdownTimeout)
		}
	}
	if spec.Has(root, "read_header_timeout") {
		cfg.ReadHeaderTimeout = fc.ReadHeaderTimeout.Duration
		if cfg.ReadHeaderTimeout <= 0 {
			errs.Addf(path, spec.Locate(root, "read_header_timeout"), "read_header_timeout %v: must be > 0, e.g. 10s", fc.ReadHeaderTimeout)
		}
	}
	if spec.Has(root, "write_timeout") {
		cfg.WriteTimeout = fc.WriteTimeout.Duration
		if cfg.WriteTimeout <= 0 {
			errs.Addf(path, spec.Locate(root, "write_timeout"), "write_timeout %v: must be > 0, e.g. 60s", fc.WriteTimeout)
		}
	}

	if fc.MaxInflight != nil {
		cfg.MaxInflight = *fc.MaxInflight
		if cfg.MaxInflight < 0 {
			errs.Addf(path, spec.Locate(root, "max_inflight"), "max_inflight %d: must be >= 0 (0: no cap)", cfg.MaxInflight)
		}
	}
	if fc.Defaults.Kind != 0 {
		if err := spec.DecodeAt(path, "defaults", &fc.Defaults, &cfg.Defaults); err != nil {
			errs.Add(err)
		} else {
			addProblems(&errs, path, root, "defaults", cfg.Defaults.problems())
		}
	}
	cfg.Services = map[string]ServiceConfig{}
	names := make([]string, 0, len(fc.Services))
	for name := range fc.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	lower := map[string]string{}
	for _, name := range names {
		node := fc.Services[name]
		if !discovery.ValidServiceName(name) {
			errs.Addf(path, keyNode(root, "services", name), "services: %q is not a service name; want letters, digits, '-', '_' or '.'", name)
			continue
		}
		if prev, dup := lower[strings.ToLower(name)]; dup {
			errs.Addf(path, keyNode(root, "services", name), "services.%s: same service as services.%s (names are case-insensitive)", name, prev)
			continue
		}
		lower[strings.ToLower(name)] = name
		sc := cfg.Defaults
		sc.QoS.Require = slices.Clone(sc.QoS.Require)
		if node.Kind != 0 {
			if err := spec.DecodeAt(path, "services."+name, &node, &sc); err != nil {
				errs.Add(err)
				continue
			}
		}
		addProblems(&errs, path, root, "services."+name, sc.problems(), "services", name)
		cfg.Services[name] = sc
	}

	dir := filepath.Dir(path)
	if len(fc.Discovery) == 0 {
		errs.Addf(path, spec.Locate(root, "discovery"), "discovery: at least one source is required; allowed kinds: %s", strings.Join(discovery.SourceKeys(), ", "))
	}
	for i := range fc.Discovery {
		src, err := buildSource(&fc.Discovery[i], dir, i)
		if err != nil {
			errs.Add(spec.At(path, &fc.Discovery[i], err))
			continue
		}
		cfg.Sources = append(cfg.Sources, src)
	}
	return cfg, errs.Err()
}

// addProblems positions validation problems at the lines of their fields. base is the field
// path for messages; at is the path to the section in the document.
func addProblems(errs *spec.Errors, file string, root *yaml.Node, base string, ps []problem, at ...string) {
	if len(at) == 0 {
		at = strings.Split(base, ".")
	}
	for _, p := range ps {
		path := make([]any, 0, len(at)+len(p.path))
		for _, a := range at {
			path = append(path, a)
		}
		for _, f := range p.path {
			name, idx, isIdx := strings.Cut(f, "[")
			path = append(path, name)
			if isIdx {
				var i int
				if _, err := fmt.Sscanf(idx, "%d]", &i); err == nil {
					path = append(path, i)
				}
			}
		}
		errs.Addf(file, spec.Locate(root, path...), "%s", p.String(base))
	}
}

// keyNode returns the key node of mapping entry path[-1] (for errors about the key itself).
func keyNode(root *yaml.Node, parent, key string) *yaml.Node {
	m := spec.Locate(root, parent)
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i]
			}
		}
	}
	return m
}

// buildSource constructs the source of one discovery entry.
func buildSource(n *yaml.Node, dir string, i int) (discovery.Source, error) {
	keys := discovery.SourceKeys()
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return nil, spec.Errorf("", n, "discovery[%d]: want a mapping with one key naming the source kind (%s)", i, strings.Join(keys, ", "))
	}
	key, val := n.Content[0].Value, n.Content[1]
	ctor, ok := discovery.LookupSource(key)
	if !ok {
		return nil, spec.Errorf("", n.Content[0], "discovery[%d]: unknown source kind %q; allowed: %s", i, key, strings.Join(keys, ", "))
	}
	if val.Kind == yaml.ScalarNode && val.ShortTag() == "!!null" {
		val = nil
	}
	if key == discovery.FileKey && val != nil {
		val = relativeTo(dir, val)
	}
	src, err := ctor(val)
	if err != nil {
		at := val
		if at == nil {
			at = n
		}
		var se *spec.Error
		var ses spec.Errors
		if errors.As(err, &se) || errors.As(err, &ses) {
			return nil, spec.At("", at, err) // already positioned by the source
		}
		return nil, spec.At("", at, fmt.Errorf("discovery[%d].%s: %w", i, key, err))
	}
	if src == nil {
		return nil, spec.Errorf("", n, "discovery[%d].%s: the source constructor returned nothing", i, key)
	}
	return src, nil
}

// relativeTo makes a file source's path relative to the configuration file's directory, as
// an operator reading the file would expect. It returns a copy; the document is not changed.
func relativeTo(dir string, val *yaml.Node) *yaml.Node {
	fix := func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Value != "" && !filepath.IsAbs(n.Value) {
			n.Value = filepath.Join(dir, n.Value)
		}
	}
	c := *val
	switch c.Kind {
	case yaml.ScalarNode:
		fix(&c)
	case yaml.MappingNode:
		c.Content = slices.Clone(c.Content)
		for j := 0; j+1 < len(c.Content); j += 2 {
			if c.Content[j].Value == "path" {
				v := *c.Content[j+1]
				fix(&v)
				c.Content[j+1] = &v
			}
		}
	}
	return &c
}
