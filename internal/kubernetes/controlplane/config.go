package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/tools"
)

// Binary names looked up in Config.BinDir.
const (
	APIServerBinary         = "kube-apiserver"
	ControllerManagerBinary = "kube-controller-manager"
	SchedulerBinary         = "kube-scheduler"
)

// BinDirEnv names the environment variable that points at a directory holding the Kubernetes
// binaries; without it they are looked up in .tools/bin (`make setup`) above the working
// directory.
const BinDirEnv = "CONTINUUM_KUBE_BIN"

// Config says what to start and where. Zero ports mean "pick a free one".
type Config struct {
	// Dir holds the control plane's state: pki/ (certificates and keys), the kubeconfig files
	// and logs/ (one file per process). Required; created if missing.
	Dir string
	// EtcdServers are the etcd v3 client URLs (http://host:port) of the store: etcd or
	// continuum kv. Required.
	EtcdServers []string
	// BinDir holds kube-apiserver, kube-controller-manager and kube-scheduler. Empty: $CONTINUUM_KUBE_BIN,
	// else .tools/bin of the clone or the setup cache (FindBinDir).
	BinDir string

	// ControllerManager starts kube-controller-manager (Deployments become ReplicaSets and Pods,
	// service-account tokens, garbage collection, ...).
	ControllerManager bool
	// Scheduler starts kube-scheduler (binds Pods to Nodes).
	Scheduler bool

	// APIServerPort is kube-apiserver's HTTPS port on 127.0.0.1 (0: a free port).
	APIServerPort int
	// ControllerManagerPort and SchedulerPort are their health/metrics HTTPS ports (0: free).
	ControllerManagerPort int
	SchedulerPort         int

	// ServiceClusterIPRange is the CIDR Service IPs are allocated from.
	ServiceClusterIPRange string
	// EtcdPrefix is the key prefix of every object in the store (kube-apiserver's --etcd-prefix).
	EtcdPrefix string

	// APIServerArgs, ControllerManagerArgs and SchedulerArgs are appended to each command line
	// (e.g. "--v=4"); a flag given here overrides the one this package sets.
	APIServerArgs         []string
	ControllerManagerArgs []string
	SchedulerArgs         []string

	// ReadyTimeout bounds the wait for each component to report healthy.
	ReadyTimeout time.Duration

	// Address is where the apiserver listens and what it advertises, and the host of the
	// kubeconfigs' server URL; empty is 127.0.0.1. In a Kubernetes node of a testbed it is the
	// node's address, which kubelets on the other nodes reach across the emulated links. The
	// serving certificate is valid for it.
	Address string
	// ExtraSANs are further addresses the apiserver's serving certificate is valid for.
	ExtraSANs []net.IP
	// Wrap, if set, turns each component's command line into the one started: the testbed's
	// launcher, which enters a node's network namespace and cgroup first. An error (the testbed
	// is going down) fails the start, or ends the restarts of a supervised component.
	Wrap func(argv []string) ([]string, error)
	// Dial, if set, opens the connections of the control plane's own clients (health checks,
	// Client, RESTConfig): into the node's network namespace when the components run in one.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// address is Address or its default.
func (c *Config) address() string {
	if c.Address == "" {
		return "127.0.0.1"
	}
	return c.Address
}

// DefaultConfig returns a configuration with the apiserver only, free ports and Kubernetes'
// usual service range; Dir and EtcdServers remain to be set.
func DefaultConfig() Config {
	return Config{
		ServiceClusterIPRange: "10.96.0.0/16",
		EtcdPrefix:            "/registry",
		ReadyTimeout:          90 * time.Second,
	}
}

// Validate reports every invalid field with what is allowed.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("dir: required (the directory for certificates, kubeconfigs and logs)"))
	}
	if len(c.EtcdServers) == 0 {
		errs = append(errs, errors.New("etcd servers: at least one etcd v3 client URL (http://host:port) is required"))
	}
	for _, s := range c.EtcdServers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("etcd server %q: want an http:// or https:// URL with host:port", s))
		}
	}
	for _, p := range []struct {
		name string
		port int
	}{{"apiserver port", c.APIServerPort}, {"controller-manager port", c.ControllerManagerPort}, {"scheduler port", c.SchedulerPort}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d: want 0 (a free port) or 1-65535", p.name, p.port))
		}
	}
	if _, n, err := net.ParseCIDR(c.ServiceClusterIPRange); err != nil || n.IP.To4() == nil {
		errs = append(errs, fmt.Errorf("service cluster IP range %q: want an IPv4 CIDR such as 10.96.0.0/16", c.ServiceClusterIPRange))
	}
	if !strings.HasPrefix(c.EtcdPrefix, "/") {
		errs = append(errs, fmt.Errorf("etcd prefix %q: must start with /", c.EtcdPrefix))
	}
	if c.Address != "" {
		if ip := net.ParseIP(c.Address); ip == nil || ip.To4() == nil {
			errs = append(errs, fmt.Errorf("address %q: want an IPv4 address, such as a testbed node's", c.Address))
		}
	}
	if c.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ready timeout %v: must be positive", c.ReadyTimeout))
	}
	return errors.Join(errs...)
}

// FindBinDir returns the directory holding the Kubernetes binaries: $CONTINUUM_KUBE_BIN, else
// .tools/bin of the clone above the working directory or the running executable (symlinks
// followed), else the setup cache's kubernetes-* build (internal/tools). The error says how to get
// them.
func FindBinDir() (string, error) {
	if d := os.Getenv(BinDirEnv); d != "" {
		if err := checkBinaries(d, APIServerBinary); err != nil {
			return "", fmt.Errorf("$%s: %w", BinDirEnv, err)
		}
		return d, nil
	}
	t := tools.Bin(APIServerBinary)
	t.CacheDir = "kubernetes-*"
	t.OK = func(p string) bool { return checkBinaries(filepath.Dir(p), APIServerBinary) == nil }
	if p, ok := tools.Find(t); ok {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%s not found in %s: run `continuum setup kubernetes` in the clone or set $%s to the directory holding it", APIServerBinary, tools.Searched(), BinDirEnv)
}

// checkBinaries reports the first of names that is not an executable file in dir.
func checkBinaries(dir string, names ...string) error {
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s in %s is not an executable file", n, dir)
		}
	}
	return nil
}
