package cluster

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
)

// Config describes a one-node cluster. DefaultConfig gives one that works on a machine set up by
// `make setup`; Validate says what is wrong with one.
type Config struct {
	// StateDir holds everything the cluster writes: the store's data, the PKI and kubeconfigs,
	// containerd's root and state, kubelet's root, logs, and state.json. Down removes it.
	StateDir string
	// Store is the control plane's store, by the name its system registered it under in
	// package clusterstore: "kv" (one continuum kv member) or "etcd".
	Store string
	// NodeName is the Node's name.
	NodeName string
	// PodCIDR is the bridge's subnet. Its first address is the bridge's own, which the API server
	// advertises and CoreDNS listens on, so that pods reach both.
	PodCIDR string
	// ServiceCIDR is the range ClusterIPs come from; its first address is the kubernetes Service.
	ServiceCIDR string
	// ClusterDomain is the DNS domain of Services ("cluster.local").
	ClusterDomain string
	// Bridge is the name of the Linux bridge pods attach to.
	Bridge string
	// BinDir holds the Kubernetes binaries, etcd and CoreDNS (.tools/bin from `make setup`).
	BinDir string
	// ContinuumBin is the continuum binary that runs the kv member.
	ContinuumBin string
	// Images are OCI image tarballs (`continuum image build`) imported into containerd at Up.
	Images []string
	// SandboxImage is the image of pods' sandbox ("pause") containers; it must be among Images.
	SandboxImage string
}

// DefaultConfig returns the configuration `continuum cluster up` starts from.
func DefaultConfig() Config {
	return Config{
		StateDir:      "/var/lib/continuum/cluster",
		Store:         "kv",
		NodeName:      "continuum",
		PodCIDR:       "10.244.0.0/16",
		ServiceCIDR:   "10.96.0.0/16",
		ClusterDomain: "cluster.local",
		Bridge:        "continuum0",
	}
}

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	domainName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Validate checks every field and names the first one that is wrong and what it may be.
func (c Config) Validate() error {
	if c.StateDir == "" || !filepath.IsAbs(c.StateDir) {
		return fmt.Errorf("state dir %q: want an absolute path", c.StateDir)
	}
	st, err := clusterstore.Lookup(c.Store)
	if err != nil {
		return err
	}
	if !dnsLabel.MatchString(c.NodeName) {
		return fmt.Errorf("node name %q: want a DNS label (a-z, 0-9, '-', at most 63)", c.NodeName)
	}
	pods, err := ipv4Prefix("pod CIDR", c.PodCIDR, 24)
	if err != nil {
		return err
	}
	svcs, err := ipv4Prefix("service CIDR", c.ServiceCIDR, 28)
	if err != nil {
		return err
	}
	if pods.Overlaps(svcs) {
		return fmt.Errorf("pod CIDR %s overlaps service CIDR %s", pods, svcs)
	}
	if !domainName.MatchString(c.ClusterDomain) {
		return fmt.Errorf("cluster domain %q: want a DNS name such as cluster.local", c.ClusterDomain)
	}
	if c.Bridge == "" || len(c.Bridge) > 15 {
		return fmt.Errorf("bridge %q: want an interface name of 1 to 15 characters", c.Bridge)
	}
	if c.BinDir == "" {
		return fmt.Errorf("bin dir: required (the directory `make setup` links kube-apiserver, kubelet, ... into)")
	}
	// The store says what it needs (a continuum binary, a bin dir) by failing to build its
	// command line without it.
	if _, err := st.Command(c.storeArgs(filepath.Join(c.StateDir, "store"), "http://127.0.0.1:2379", "http://127.0.0.1:2381", "http://127.0.0.1:2380")); err != nil {
		return err
	}
	if c.SandboxImage == "" {
		return fmt.Errorf("sandbox image: required (a reference of one of the imported images)")
	}
	return nil
}

func ipv4Prefix(what, s string, maxBits int) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s %q: want an IPv4 CIDR such as 10.244.0.0/16", what, s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%s %q has host bits set: did you mean %s", what, s, p.Masked())
	}
	if p.Bits() > maxBits {
		return netip.Prefix{}, fmt.Errorf("%s %q: want at most /%d", what, s, maxBits)
	}
	return p, nil
}

// gateway is the first address of a prefix: the bridge's on the pod network, the kubernetes
// Service's on the service network.
func gateway(cidr string) netip.Addr {
	return netip.MustParsePrefix(cidr).Addr().Next()
}

// paths names what lives where in the state directory: the cluster's own files here, its
// nodes' under nodes/<name> (nodePaths), or, for the one-node host cluster, in the state
// directory itself.
type paths struct{ root string }

func (p paths) join(elem ...string) string {
	return filepath.Join(append([]string{p.root}, elem...)...)
}
func (p paths) state() string        { return p.join("state.json") }
func (p paths) logs() string         { return p.join("logs") }
func (p paths) store() string        { return p.join("store") }
func (p paths) controlPlane() string { return p.join("control-plane") }

// node is the directory of a node of a multi-node cluster.
func (p paths) node(name string) nodePaths { return nodePaths{p.join("nodes", name)} }

// host is the directory of the one-node host cluster's node: the state directory, as before
// clusters had nodes.
func (p paths) host() nodePaths { return nodePaths{p.root} }
