package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbasev1alpha1 "k8s.io/component-base/config/v1alpha1"
	proxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// hostCgroupRoot is the cgroup under which the one-node host cluster's kubelet puts every pod
// (in each v1 hierarchy, or in the unified one), so that Down finds all of them in one subtree.
// A node of a multi-node cluster has its own (nodeCgroupRoot).
const hostCgroupRoot = "/continuum-cluster"

// containerdConfig is node n's containerd's config.toml: every path under the node's directory
// (the network namespaces too, so Down finds their mounts there), the CRI plugin on Debian's
// runc and CNI plugins, and the sandbox image one of ours, as nothing can be pulled here.
func (c Config) containerdConfig(n nodeConfig) string {
	p := n.paths()
	d := p.containerd()
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  netns_mounts_under_state_dir = true
  # Never ask for a lower OOM score than containerd's own: kubelet gives sandboxes -998 and
  # Guaranteed pods -997, which needs CAP_SYS_RESOURCE, and machines like this one (a VM that
  # withholds it) would fail every pod in runc ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
`, filepath.Join(d, "root"), filepath.Join(d, "state"), p.containerdSock(), p.containerdSock()+".ttrpc",
		filepath.Join(d, "opt"), c.SandboxImage, cniBinDir, p.cniConf())
}

// cniBinDir is where Debian's containernetworking-plugins installs the plugins.
const cniBinDir = "/usr/lib/cni"

// cniConfig is node n's pod network: one bridge whose address is the pods' gateway, addresses
// from host-local in the node's pod CIDR (its allocations kept in the node's directory),
// hairpin so that a pod reaches itself through a Service, and portmap for hostPort. No
// masquerading: pods talk to the nodes and each other, and nothing outside this machine is
// reachable anyway.
func (c Config) cniConfig(n nodeConfig) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "continuum",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": n.Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": n.PodCIDR.String(), "gateway": n.gateway().String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": n.paths().cniIPAM(),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is node n's kubelet's configuration file. The choices that matter on this
// machine: cgroup v1 is allowed (failCgroupV1, default true since 1.35); every pod lives under
// the node's cgroup root; image garbage collection is off (an image deleted here cannot be
// pulled again); eviction thresholds are low (a shared test machine's disk and memory are not
// the cluster's to guard). It serves on the node's IP and gives pods the node's CoreDNS.
func (c Config) kubeletConfig(n nodeConfig, clientCA string) ([]byte, error) {
	p := n.paths()
	f := false
	t := true
	hi, lo := int32(100), int32(99)
	kc := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &f},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &t},
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: clientCA},
		},
		Authorization:               kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		Address:                     n.IP.String(),
		ReadOnlyPort:                0,
		HealthzBindAddress:          "127.0.0.1",
		CgroupDriver:                "cgroupfs",
		CgroupRoot:                  n.CgroupRoot,
		CgroupsPerQOS:               &t,
		FailCgroupV1:                &f,
		FailSwapOn:                  &f,
		ClusterDNS:                  []string{n.gateway().String()},
		ClusterDomain:               c.ClusterDomain,
		ContainerRuntimeEndpoint:    "unix://" + p.containerdSock(),
		ImageGCHighThresholdPercent: &hi,
		ImageGCLowThresholdPercent:  &lo,
		EvictionHard:                map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
		ResolverConfig:              strPtr("/etc/resolv.conf"),
		EnforceNodeAllocatable:      []string{"pods"},
		// Pods' logs in the node's directory, not /var/log/pods, so that Down removes them and
		// no kubelet removes another's (it deletes the log directories of pods it does not know).
		PodLogsDir: p.podLogs(),
		// 0 is kubelet's default (40 s), for the default grace period.
		NodeLeaseDurationSeconds: c.leaseSeconds(),
	}
	return yaml.Marshal(kc)
}

// kubeProxyConfig runs node n's kube-proxy in nftables mode (one table per family, which Down
// deletes; in the node's namespace, if it has one) and masquerades all Service traffic, so that
// replies come back through the node even when a pod talks to a Service whose endpoint is on the
// same bridge, without changing the host's bridge-netfilter settings. Its cluster CIDR is the
// cluster's, not the node's: traffic from any node's pods is the cluster's.
func (c Config) kubeProxyConfig(n nodeConfig, kubeconfig string) ([]byte, error) {
	t := true
	zero := int32(0)
	kc := proxyv1alpha1.KubeProxyConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: "kubeproxy.config.k8s.io/v1alpha1", Kind: "KubeProxyConfiguration"},
		ClientConnection:   componentbasev1alpha1.ClientConnectionConfiguration{Kubeconfig: kubeconfig},
		Mode:               "nftables",
		ClusterCIDR:        c.PodCIDR,
		HostnameOverride:   n.Name,
		BindAddress:        "0.0.0.0",
		HealthzBindAddress: "127.0.0.1:10256",
		MetricsBindAddress: "127.0.0.1:10249",
		Conntrack:          proxyv1alpha1.KubeProxyConntrackConfiguration{MaxPerCore: &zero, Min: &zero},
		NFTables:           proxyv1alpha1.KubeProxyNFTablesConfiguration{MasqueradeAll: t},
	}
	return yaml.Marshal(kc)
}

// corefile serves the cluster's names (Services, StatefulSet members through headless
// Services, pods) from the API server. Each node runs its own CoreDNS, on its bridge's address
// kubelet gives the node's pods as their DNS server: a lookup does not cross the emulated links
// (as with NodeLocal DNSCache on real clusters), and during a partition a node's pods still
// resolve names from what its CoreDNS last heard from the API server (the kubernetes plugin
// answers from its informers' cache). The host cluster's CoreDNS forwards the rest to the host's
// resolver; from a node's namespace the fabric reaches only nodes (and their pods), not that
// resolver, so there other names are refused at once rather than after a forwarding timeout.
func (c Config) corefile(n nodeConfig, kubeconfig string) string {
	bind := n.gateway().String()
	s := fmt.Sprintf(`%[1]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[2]s
    errors
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        kubeconfig %[3]s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`, c.ClusterDomain, bind, kubeconfig)
	if n.Netns != "" {
		return s
	}
	return s + fmt.Sprintf(`.:53 {
    bind %s
    errors
    forward . /etc/resolv.conf
    cache 30
}
`, bind)
}

// kubeletArgs is node n's kubelet's command line, with its configuration file and kubeconfig.
func (c Config) kubeletArgs(n nodeConfig, config, kubeconfig string) []string {
	argv := []string{filepath.Join(c.BinDir, "kubelet"),
		"--config", config, "--kubeconfig", kubeconfig, "--root-dir", n.paths().kubelet(),
		"--hostname-override", n.Name, "--node-ip", n.IP.String(),
		"--cert-dir", filepath.Join(n.paths().kubelet(), "pki")}
	if len(n.Labels) > 0 {
		argv = append(argv, "--node-labels", n.nodeLabelsArg())
	}
	return argv
}

func strPtr(s string) *string { return &s }

// writeFile writes a file the cluster's processes read, creating its directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
