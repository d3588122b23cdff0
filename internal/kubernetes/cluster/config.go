package cluster

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"time"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
)

// Config describes a cluster: by default one node in the host's namespaces; with Topology or
// Nodes one Kubernetes node per node of a testbed, whose links carry the traffic between them.
// DefaultConfig gives one that works on a machine set up by `make setup`; Validate says what is
// wrong with one.
type Config struct {
	// StateDir holds everything the cluster writes: the store's data, the PKI and kubeconfigs,
	// containerd's root and state, kubelet's root, logs, and state.json. Down removes it.
	StateDir string
	// Store is the control plane's store, by the name its system registered it under in
	// package clusterstore: "kv" (one continuum kv member) or "etcd".
	Store string
	// NodeName is the Node's name (of the one-node cluster; a multi-node cluster's Nodes are
	// named as the topology's nodes).
	NodeName string
	// PodCIDR is the bridge's subnet. Its first address is the bridge's own, which the API server
	// advertises and CoreDNS listens on, so that pods reach both.
	PodCIDR string
	// ServiceCIDR is the range ClusterIPs come from; its first address is the kubernetes Service.
	ServiceCIDR string
	// ClusterDomain is the DNS domain of Services ("cluster.local").
	ClusterDomain string
	// Bridge is the name of the Linux bridge pods attach to (in the one-node cluster; each node
	// of a multi-node cluster has its own, bridgeName).
	Bridge string
	// BinDir holds the Kubernetes binaries, etcd and CoreDNS (.tools/bin from `make setup`).
	BinDir string
	// ContinuumBin is the continuum binary that runs the kv member.
	ContinuumBin string
	// Images are OCI image tarballs (`continuum image build`) imported into containerd at Up.
	Images []string
	// SandboxImage is the image of pods' sandbox ("pause") containers; it must be among Images.
	SandboxImage string

	// Topology, if set, is a topology file (nodes, links: the testbed's schema). The cluster then
	// brings up a testbed of it and runs a Kubernetes node in each of its nodes (containerd,
	// kubelet, kube-proxy, CoreDNS in the node's network namespace and cgroup), with the control
	// plane in one of them: traffic between nodes, pods' and the kubelets' to the API server
	// alike, takes the testbed's emulated links, and the testbed's faults are the cluster's.
	Topology string
	// Nodes, if positive and Topology is not set, is the number of nodes of such a cluster: n1
	// to nN, each linked to each by a link without delay, loss or bandwidth limit.
	Nodes int
	// ControlPlane is the node the control plane runs in (default: controlPlaneNode's choice:
	// the first labelled tier=cloud, else the one named cloud, else the first).
	ControlPlane string
	// NodeGracePeriod is how long a Node may go unheard before the node controller marks it
	// NotReady (kube-controller-manager's --node-monitor-grace-period; 0: Kubernetes' 50 s).
	// The kubelets' leases then last 4/5 of it and are renewed every fifth of it, as with
	// Kubernetes' defaults (40 s leases renewed every 10 s): a grace period shorter than the
	// default needs renewals as much more often.
	NodeGracePeriod time.Duration
	// EvictionTimeout is how long a pod stays bound to a NotReady or unreachable Node before it
	// is evicted: the tolerations the API server gives every pod that sets none
	// (--default-not-ready-toleration-seconds, --default-unreachable-toleration-seconds; 0:
	// Kubernetes' 300 s).
	EvictionTimeout time.Duration

	// TestbedStateDir is where the testbed of a multi-node cluster records itself, as
	// `continuum testbed up --state-dir` would (empty: testbed.DefaultStateDir()); `continuum
	// testbed status/fault --name <it>` find it there.
	TestbedStateDir string
}

// multiNode reports whether the cluster runs in a testbed, one node per testbed node.
func (c Config) multiNode() bool { return c.Topology != "" || c.Nodes > 0 }

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
	switch {
	case c.Topology != "" && c.Nodes > 0:
		return fmt.Errorf("topology %s and %d nodes: give one of them (the topology names its nodes)", c.Topology, c.Nodes)
	case c.Nodes < 0:
		return fmt.Errorf("nodes %d: want at least 1 (or 0 for the one-node cluster in the host's namespaces)", c.Nodes)
	case c.ControlPlane != "" && !c.multiNode():
		return fmt.Errorf("control plane node %q: only a cluster of several nodes (a topology or a node count) has one to choose", c.ControlPlane)
	}
	if err := wholeSeconds("node grace period", c.NodeGracePeriod, minNodeGracePeriod, time.Hour); err != nil {
		return err
	}
	if err := wholeSeconds("eviction timeout", c.EvictionTimeout, time.Second, 24*time.Hour); err != nil {
		return err
	}
	if c.multiNode() {
		// The topology, its nodes and their configuration: what Up would refuse, refused here.
		if _, err := c.plan(); err != nil {
			return err
		}
	}
	return nil
}

// minNodeGracePeriod is the shortest node grace period: the node controller looks at the
// Nodes every 5 s (--node-monitor-period), and a kubelet renews its lease every fifth of the
// period, at least every second.
const minNodeGracePeriod = 5 * time.Second

// wholeSeconds checks an optional duration that Kubernetes takes in seconds: 0 (its default)
// or a whole number of seconds from min to max.
func wholeSeconds(what string, d, min, max time.Duration) error {
	if d == 0 {
		return nil
	}
	if d < min || d > max || d%time.Second != 0 {
		return fmt.Errorf("%s %s: want a whole number of seconds from %s to %s (or 0 for Kubernetes' default)", what, d, min, max)
	}
	return nil
}

// leaseSeconds is the kubelets' lease duration for the node grace period (0: kubelet's
// default, 40 s, for the default period): 4/5 of it, as 40 s is of 50 s.
func (c Config) leaseSeconds() int32 {
	return int32(c.NodeGracePeriod * 4 / 5 / time.Second)
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
func (p paths) host() nodePaths { return nodePaths(p) }
