package kubernetes

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/spec"
)

// YAMLKey is the key of this source's section in the proxy's discovery configuration.
const YAMLKey = "kubernetes"

// Registering here (not in the proxy) keeps client-go out of binaries that do not import this
// package, such as a slim per-node proxy that only reads files or kv. It is the kubernetes
// platform's source too: `platform: kubernetes:<namespace>/<run>` (a scenario's proxy on
// `run --platform kubernetes`) is `kubernetes: <namespace>/<run>` (PlatformConfig).
func init() { discovery.RegisterPlatformSource(YAMLKey, NewFromYAML) }

// The labels by which a run on the kubernetes platform marks the Services of its declared
// services (package kubeplatform sets them; this package imports no platform).
const (
	labelRun     = "continuum.io/run"
	labelRole    = "continuum.io/role"
	roleService  = "service"
	labelManaged = "app.kubernetes.io/managed-by=continuum"
)

// PlatformConfig is the configuration of the kubernetes platform's source for the endpoint
// address "<namespace>/<run>": the run's declared services in its namespace (the Services the
// platform labels with the run and the service role), with the in-cluster configuration (the
// node pod's ServiceAccount, which may read them).
func PlatformConfig(address string) (Config, error) {
	ns, run, ok := strings.Cut(address, "/")
	if !ok || run == "" || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsValidLabelValue(run)) > 0 {
		return Config{}, fmt.Errorf("address %q: want <namespace>/<run> (a namespace name, a run's label value)", address)
	}
	cfg := DefaultConfig()
	cfg.Namespace = ns
	cfg.LabelSelector = labelManaged + "," + labelRun + "=" + run + "," + labelRole + "=" + roleService
	return cfg, nil
}

// DefaultMetricsInterval is how often node metrics are polled: metrics-server scrapes kubelets
// every 15 s by default, so polling faster only returns the same numbers.
const DefaultMetricsInterval = 15 * time.Second

// Config says which cluster and which part of it to watch. In YAML:
//
//	kubernetes:
//	  namespace: ""         # empty: all namespaces
//	  kubeconfig: ""        # empty: in-cluster config (the Pod's service account)
//	  label_selector: ""    # e.g. "continuum.io/route=true": only Services whose slices match
//	  metrics_interval: 15s
type Config struct {
	// Namespace limits EndpointSlices and Pods to one namespace; empty watches all namespaces.
	// With all namespaces, Services of the same name in different namespaces form one service
	// (clients route by name); each instance's "namespace" attribute tells them apart.
	Namespace string `yaml:"namespace"`
	// Kubeconfig is a kubeconfig file to use; empty uses the in-cluster configuration.
	Kubeconfig string `yaml:"kubeconfig"`
	// LabelSelector selects EndpointSlices (they carry their Service's labels); empty: all.
	LabelSelector string `yaml:"label_selector"`
	// MetricsInterval is how often metrics.k8s.io is polled (0: DefaultMetricsInterval).
	MetricsInterval spec.Duration `yaml:"metrics_interval"`
	// Logger receives warnings (unreachable API, missing RBAC, absent metrics); nil: slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// DefaultConfig watches all namespaces with the in-cluster configuration.
func DefaultConfig() Config {
	return Config{MetricsInterval: spec.Duration{Duration: DefaultMetricsInterval}}
}

// Validate reports every invalid field.
func (c *Config) Validate() error {
	var errs []error
	if c.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, msgs[0]))
		}
	}
	if c.LabelSelector != "" {
		if _, err := labels.Parse(c.LabelSelector); err != nil {
			errs = append(errs, fmt.Errorf("label_selector %q: %w", c.LabelSelector, err))
		}
	}
	if c.MetricsInterval.Duration < 0 {
		errs = append(errs, fmt.Errorf("metrics_interval %v: must not be negative", c.MetricsInterval))
	}
	return errors.Join(errs...)
}

// NewFromYAML builds a source from the value of the proxy configuration's `kubernetes:` key
// (nil or an empty mapping: defaults). Unknown keys and bad values are errors naming the field
// and line; the caller adds the file name with spec.At.
func NewFromYAML(node *yaml.Node) (discovery.Source, error) {
	cfg := DefaultConfig()
	if node != nil && node.Kind == yaml.ScalarNode && node.Tag != "!!null" {
		pc, err := PlatformConfig(node.Value)
		if err != nil {
			return nil, spec.At("", node, fmt.Errorf("%s: want a mapping of the source's settings, or the kubernetes platform's endpoint %w", YAMLKey, err))
		}
		return Open(pc)
	}
	if node != nil {
		if err := spec.DecodeAt("", YAMLKey, node, &cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, spec.At("", node, fmt.Errorf("%s: %w", YAMLKey, err))
	}
	return Open(cfg)
}

// Open builds the API clients from cfg (the kubeconfig file, or the in-cluster service
// account) and returns the source. No request is made before Run.
func Open(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "continuum-proxy"
	kc, err := clientset.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	mc, err := metricsclient.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("metrics.k8s.io client: %w", err)
	}
	return New(cfg, kc, mc)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes in-cluster config (set kubeconfig when not running in a Pod): %w", err)
		}
		return rc, nil
	}
	// clientcmd accepts a missing file silently in some paths; a typo should be an error.
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, nil
}
