package cluster

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// nodeLabel on a Node names the testbed node it runs in; it is kubeplatform.LabelNode, by which
// `run --platform kubernetes` places a scenario node's pod on the cluster Node of that name
// (this package cannot import kubeplatform, whose tests start clusters with it).
const nodeLabel = "continuum.io/node"

// nodeSpec is what the cluster is told about one node it runs: from the topology its name and
// labels, from the testbed that hosts it where it lives. Specs come in the topology's order,
// which decides the nodes' pod CIDRs.
type nodeSpec struct {
	Name   string
	Labels map[string]string
	// Netns is the node's network namespace (/run/netns/<Netns>); "" is the host's.
	Netns string
	// Addr is the node's address on the testbed's network: kubelet's node IP and the address
	// it serves on, which the API server reaches across the emulated links.
	Addr netip.Addr
	// Cgroup is the testbed node's cgroup, relative to every hierarchy's root
	// ("continuum/<testbed>/<node>"); "" when the node is in no testbed.
	Cgroup string
}

// nodeConfig is one Kubernetes node of the cluster: one containerd, kubelet, kube-proxy and
// CoreDNS, which see only what is the node's own. Several nodes share one host, its mount
// namespace and its cgroup hierarchies, so everything a node's daemons write or name is
// distinct per node:
//   - Dir (nodes/<name> in the state directory) holds containerd's root, state and sockets,
//     kubelet's root, the CNI configuration and host-local's allocations, the pods' logs, and
//     kube-proxy's and CoreDNS's configuration. One containerd per node, because a kubelet
//     treats every pod of its runtime as its own: its garbage collection removes the sandboxes
//     of pods it does not know (kuberuntime_gc.go), so two kubelets on one containerd would
//     delete each other's pods. The same goes for pod logs: kubelet removes the log
//     directories of pods it does not know, so a shared /var/log/pods would let one kubelet
//     delete another's logs. host-local keeps its allocations per data directory, so two nodes
//     sharing one would each hand out the other's addresses, and a shared CNI conf_dir would
//     give every node the first node's subnet.
//   - PodCIDR is the node's own /24 of the cluster's pod CIDR (node i gets the i-th), which
//     the fabric routes to the node (testbed.Options.NodePrefixes), so pod traffic between
//     nodes takes the emulated links.
//   - CgroupRoot is kubelet's cgroup root: two kubelets with one root would each find the
//     other's pods in it and remove them as orphans.
//   - Bridge is the pod bridge in the node's namespace.
//
// The one-node host cluster (hostNode) is the special case with Dir the state directory itself,
// the whole pod CIDR, no namespace and no labels: it renders what it did before nodes existed.
type nodeConfig struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
	// Netns is the node's network namespace; "" is the host's.
	Netns string `json:"netns,omitempty"`
	// IP is kubelet's node IP and serving address.
	IP netip.Addr `json:"ip"`
	// PodCIDR is the subnet of the node's bridge; its first address is the bridge's, the pods'
	// gateway and where the node's CoreDNS listens.
	PodCIDR netip.Prefix `json:"pod_cidr"`
	// Dir holds the node's daemons' files (nodePaths).
	Dir string `json:"dir"`
	// CgroupRoot is kubelet's cgroupRoot: the cgroup under which it puts every pod.
	CgroupRoot string `json:"cgroup_root"`
	// Bridge is the name of the pods' bridge.
	Bridge string `json:"bridge"`
	// Labels are the Node's labels (kubelet's --node-labels).
	Labels map[string]string `json:"labels,omitempty"`
}

// paths names the node's files.
func (n nodeConfig) paths() nodePaths { return nodePaths{n.Dir} }

// gateway is the bridge's address: the pods' gateway and their DNS server.
func (n nodeConfig) gateway() netip.Addr { return n.PodCIDR.Addr().Next() }

// hostNode is the one node of the host cluster that `continuum cluster up` brings up without a
// topology: in the host's namespaces, on the whole pod CIDR, with the state directory as its
// directory and the bridge's address as its IP. cfg must be valid.
func (c Config) hostNode() nodeConfig {
	pods := netip.MustParsePrefix(c.PodCIDR)
	return nodeConfig{
		Name:       c.NodeName,
		IP:         pods.Addr().Next(),
		PodCIDR:    pods,
		Dir:        c.StateDir,
		CgroupRoot: hostCgroupRoot,
		Bridge:     c.Bridge,
	}
}

// maxSocketPath is the longest path a unix socket may be bound at (sun_path's 108 bytes, the
// last one the terminating NUL).
const maxSocketPath = 107

// nodeConfigs makes the configuration of the cluster's nodes, one per spec, in order: the
// nodes' directories under nodes/<name>, their /24s of the pod CIDR, cgroup roots, bridges and
// labels. It refuses what would make two nodes share anything (names, bridges) or kubelet
// refuse to start (labels, socket paths), naming the node.
func (c Config) nodeConfigs(specs []nodeSpec) ([]nodeConfig, error) {
	if len(specs) == 0 {
		return nil, errors.New("no nodes: a cluster needs at least one")
	}
	cidrs, err := nodePodCIDRs(c.PodCIDR, len(specs))
	if err != nil {
		return nil, err
	}
	pods := netip.MustParsePrefix(c.PodCIDR) // nodePodCIDRs has checked it
	svcs, _ := netip.ParsePrefix(c.ServiceCIDR)
	out := make([]nodeConfig, len(specs))
	names := map[string]bool{}
	bridges := map[string]string{}
	for i, s := range specs {
		if !dnsLabel.MatchString(s.Name) {
			return nil, fmt.Errorf("node %q: want a DNS label (a-z, 0-9, '-', at most 63) as its name", s.Name)
		}
		if names[s.Name] {
			return nil, fmt.Errorf("node %q: declared twice", s.Name)
		}
		names[s.Name] = true
		if !s.Addr.Is4() {
			return nil, fmt.Errorf("node %s: address %v: want an IPv4 address (kubelet's node IP)", s.Name, s.Addr)
		}
		if pods.Contains(s.Addr) {
			return nil, fmt.Errorf("node %s: address %s is inside the pod CIDR %s", s.Name, s.Addr, pods)
		}
		if svcs.IsValid() && svcs.Contains(s.Addr) {
			return nil, fmt.Errorf("node %s: address %s is inside the service CIDR %s", s.Name, s.Addr, svcs)
		}
		cg, err := nodeCgroupRoot(s)
		if err != nil {
			return nil, err
		}
		labels, err := nodeLabels(s)
		if err != nil {
			return nil, err
		}
		n := nodeConfig{
			Name:       s.Name,
			Index:      i,
			Netns:      s.Netns,
			IP:         s.Addr,
			PodCIDR:    cidrs[i],
			Dir:        paths{c.StateDir}.node(s.Name).root,
			CgroupRoot: cg,
			Bridge:     bridgeName(s.Name),
			Labels:     labels,
		}
		if other, dup := bridges[n.Bridge]; dup {
			return nil, fmt.Errorf("nodes %s and %s: both would name their bridge %s: rename one", other, s.Name, n.Bridge)
		}
		bridges[n.Bridge] = s.Name
		for _, sock := range n.paths().sockets() {
			if len(sock) > maxSocketPath {
				return nil, fmt.Errorf("node %s: socket %s is %d bytes long, over the %d a unix socket allows: use a shorter state dir or node name", s.Name, sock, len(sock), maxSocketPath)
			}
		}
		out[i] = n
	}
	return out, nil
}

// nodePodCIDRs splits the cluster's pod CIDR (at most a /24) into the nodes' /24s: node i gets
// the i-th, so a node keeps its subnet as long as the nodes before it stay.
func nodePodCIDRs(podCIDR string, nodes int) ([]netip.Prefix, error) {
	p, err := ipv4Prefix("pod CIDR", podCIDR, 24)
	if err != nil {
		return nil, err
	}
	if have := 1 << (24 - p.Bits()); nodes > have {
		need := 24
		for 1<<(24-need) < nodes {
			need--
		}
		return nil, fmt.Errorf("pod CIDR %s holds %d /24s, one per node: too small for %d nodes (want a /%d or larger)", p, have, nodes, need)
	}
	a := p.Addr().As4()
	base := binary.BigEndian.Uint32(a[:])
	out := make([]netip.Prefix, nodes)
	for i := range out {
		binary.BigEndian.PutUint32(a[:], base+uint32(i)<<8)
		out[i] = netip.PrefixFrom(netip.AddrFrom4(a), 24)
	}
	return out, nil
}

// nodeCgroupRoot is kubelet's cgroup root for a node: pods in the testbed node's cgroup, as
// "pods" beside its daemons (the testbed's processes are <node>/<name>), so that the node's
// CPU quota and memory limit hold its pods too and a node fault (kill, pause: a signal to
// every process in the node's cgroup tree) reaches them; a node in no testbed gets its own
// cgroup under the host cluster's root. kubelet accepts any cgroupfs path that exists in each
// hierarchy it uses (cgroupV1impl.Validate: cpu, cpuacct, cpuset, memory, pids, systemd,
// hugetlb), so makeCgroups must create it in every one, also where the testbed made no node
// cgroup (it uses cpu, cpuacct, memory and pids only); the empty v1 cpusets of the levels
// MkdirAll makes are filled from their parents by libcontainer when kubelet creates kubepods
// below them (cpusetEnsureParent in opencontainers/cgroups fs/cpuset.go).
func nodeCgroupRoot(s nodeSpec) (string, error) {
	if s.Cgroup == "" {
		return hostCgroupRoot + "/" + s.Name, nil
	}
	cg := strings.Trim(s.Cgroup, "/")
	if cg == "" || path.Clean(cg) != cg || cg == ".." || strings.HasPrefix(cg, "../") {
		return "", fmt.Errorf("node %s: cgroup %q: want a path relative to the hierarchies' root, such as continuum/lab/%s", s.Name, s.Cgroup, s.Name)
	}
	return "/" + cg + "/" + podsCgroup, nil
}

// podsCgroup is the cgroup, below a testbed node's, that its kubelet puts the node's pods in.
const podsCgroup = "pods"

// nodeLabels are the Node's labels: continuum.io/node=<name> and the topology's. kubelet refuses
// to start with a label that is not a valid key and value, or one of the kubernetes.io and
// k8s.io namespaces a kubelet may not set on its own Node (options.ValidateKubeletFlags), so
// they are checked here, where the error can name the node and the label.
func nodeLabels(s nodeSpec) (map[string]string, error) {
	out := map[string]string{nodeLabel: s.Name}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		v := s.Labels[k]
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("node %s: label %q: %s", s.Name, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("node %s: label %s=%q: %s", s.Name, k, v, strings.Join(errs, "; "))
		}
		if kubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			return nil, fmt.Errorf("node %s: label %s: kubelet refuses labels of the kubernetes.io and k8s.io namespaces but %s and those under %s",
				s.Name, k, strings.Join(kubeletapis.KubeletLabels(), ", "), strings.Join(kubeletapis.KubeletLabelNamespaces(), " or "))
		}
		if k == nodeLabel && v != s.Name {
			return nil, fmt.Errorf("node %s: label %s=%s: the cluster sets it to the node's name", s.Name, k, v)
		}
		out[k] = v
	}
	return out, nil
}

// kubernetesLabel reports whether a label key is in the kubernetes.io or k8s.io namespace.
func kubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// nodeLabelsArg is kubelet's --node-labels value: key=value pairs, sorted by key.
func (n nodeConfig) nodeLabelsArg() string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		kv = append(kv, k+"="+n.Labels[k])
	}
	return strings.Join(kv, ",")
}

// bridgeName names a node's pod bridge: "cb-" and the node's name when that fits an interface
// name (15 bytes), else "cb-", the name's first six characters, "-" and five hex digits of a
// hash of the whole name, so that long names sharing a beginning still get distinct bridges.
// The bridge lives in the node's namespace, where no other node's is; distinct names keep a
// node on the host (or a look at `ip link` in several namespaces) from confusing two.
func bridgeName(node string) string {
	const prefix = "cb-"
	if len(prefix)+len(node) <= 15 {
		return prefix + node
	}
	h := sha256.Sum256([]byte(node))
	return prefix + node[:6] + "-" + hex.EncodeToString(h[:3])[:5]
}

// nodePaths names what lives where in a node's directory.
type nodePaths struct{ root string }

func (p nodePaths) join(elem ...string) string {
	return filepath.Join(append([]string{p.root}, elem...)...)
}
func (p nodePaths) containerd() string     { return p.join("containerd") }
func (p nodePaths) containerdSock() string { return p.join("containerd", "containerd.sock") }
func (p nodePaths) cniConf() string        { return p.join("cni") }
func (p nodePaths) cniIPAM() string        { return p.join("cni", "ipam") }
func (p nodePaths) kubelet() string        { return p.join("kubelet") }
func (p nodePaths) podLogs() string        { return p.join("pod-logs") }
func (p nodePaths) kubeProxy() string      { return p.join("kube-proxy") }
func (p nodePaths) coreDNS() string        { return p.join("coredns") }

// sockets are the unix sockets the node's daemons bind under its directory: containerd's
// (its ttrpc one the longer) and kubelet's pod-resources socket (kubelet's --root-dir).
func (p nodePaths) sockets() []string {
	return []string{p.containerdSock() + ".ttrpc", filepath.Join(p.kubelet(), "pod-resources", "kubelet.sock")}
}
