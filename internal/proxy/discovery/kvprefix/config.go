package kvprefix

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/spec"
)

// YAMLKey is the key of this source's section in the proxy's discovery configuration.
const YAMLKey = "kv"

func init() { discovery.RegisterSource(YAMLKey, NewFromYAML) }

// DefaultPrefix is where instance records live unless configured otherwise.
const DefaultPrefix = "/continuum/services/"

// DefaultEndpoint is the local member: a kv (or etcd) member runs on every node of a
// local-first deployment, and the local one keeps answering during partitions.
const DefaultEndpoint = "127.0.0.1:2379"

// DefaultDialTimeout bounds connection attempts and each list request.
const DefaultDialTimeout = 5 * time.Second

// Config says which servers to read and where the records are. In YAML:
//
//	kv:
//	  endpoints: [127.0.0.1:2379]
//	  prefix: /continuum/services/
//	  dial_timeout: 5s
type Config struct {
	// Endpoints are the etcd v3 API endpoints ("host:port" or "http://host:port").
	Endpoints []string `yaml:"endpoints"`
	// Prefix is the key prefix of the records; it must end with "/".
	Prefix string `yaml:"prefix"`
	// DialTimeout bounds connection attempts and each list request.
	DialTimeout spec.Duration `yaml:"dial_timeout"`
	// Logger receives skipped records and connection trouble; nil: slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// DefaultConfig reads DefaultPrefix from the local member.
func DefaultConfig() Config {
	return Config{
		Endpoints:   []string{DefaultEndpoint},
		Prefix:      DefaultPrefix,
		DialTimeout: spec.Duration{Duration: DefaultDialTimeout},
	}
}

// Validate reports every invalid field.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("endpoints: at least one is required (e.g. 127.0.0.1:2379)"))
	}
	for i, e := range c.Endpoints {
		if err := checkEndpoint(e); err != nil {
			errs = append(errs, fmt.Errorf("endpoints[%d]: %w", i, err))
		}
	}
	if err := checkPrefix(c.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("prefix: %w", err))
	}
	if c.DialTimeout.Duration <= 0 {
		errs = append(errs, fmt.Errorf("dial_timeout %v: must be positive", c.DialTimeout))
	}
	return errors.Join(errs...)
}

func checkPrefix(p string) error {
	// Without the trailing slash "/svc" would also match "/svc-other/...", and service names
	// could not be cut from keys unambiguously.
	if p == "" || !strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q: want a non-empty prefix ending with \"/\" (e.g. %s)", p, DefaultPrefix)
	}
	return nil
}

func checkEndpoint(e string) error {
	hostport := e
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("%q: %v", e, err)
		}
		if u.Scheme != "http" {
			return fmt.Errorf("%q: want host:port or http://host:port (TLS is not supported yet)", e)
		}
		hostport = u.Host
	}
	if _, port, err := net.SplitHostPort(hostport); err != nil || port == "" {
		return fmt.Errorf("%q: want host:port or http://host:port", e)
	}
	return nil
}

// NewFromYAML builds a source from the value of the proxy configuration's `kv:` key (nil or
// an empty mapping: defaults). Unknown keys and bad values are errors naming the field and
// line; the caller adds the file name with spec.At.
func NewFromYAML(node *yaml.Node) (discovery.Source, error) {
	cfg := DefaultConfig()
	if node != nil {
		if err := spec.DecodeAt("", YAMLKey, node, &cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, spec.At("", node, fmt.Errorf("%s: %w", YAMLKey, err))
	}
	return New(cfg, nil)
}
