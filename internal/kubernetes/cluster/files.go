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

// cgroupRoot is the cgroup under which kubelet puts every pod (in each v1 hierarchy, or in the
// unified one), so that Down finds all of them in one subtree.
const cgroupRoot = "/continuum-cluster"

// containerdConfig is containerd's config.toml: every path under the state directory (the
// network namespaces too, so Down finds their mounts there), the CRI plugin on Debian's runc
// and CNI plugins, and the sandbox image one of ours, as nothing can be pulled here.
func (c Config) containerdConfig() string {
	p := paths{c.StateDir}
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

// cniConfig is the pod network: one bridge whose address is the pods' gateway, addresses from
// host-local (its allocations kept in the state directory), hairpin so that a pod reaches itself
// through a Service, and portmap for hostPort. No masquerading: pods talk to the node and each
// other, and nothing outside this machine is reachable anyway.
func (c Config) cniConfig() ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "continuum",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": c.Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": c.PodCIDR, "gateway": gateway(c.PodCIDR).String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(paths{c.StateDir}.cniConf(), "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is kubelet's configuration file. The choices that matter on this machine:
// cgroup v1 is allowed (failCgroupV1, default true since 1.35); every pod lives under cgroupRoot;
// image garbage collection is off (an image deleted here cannot be pulled again); eviction
// thresholds are low (a shared test machine's disk and memory are not the cluster's to guard).
func (c Config) kubeletConfig(clientCA string) ([]byte, error) {
	p := paths{c.StateDir}
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
		Address:                     gateway(c.PodCIDR).String(),
		ReadOnlyPort:                0,
		HealthzBindAddress:          "127.0.0.1",
		CgroupDriver:                "cgroupfs",
		CgroupRoot:                  cgroupRoot,
		CgroupsPerQOS:               &t,
		FailCgroupV1:                &f,
		FailSwapOn:                  &f,
		ClusterDNS:                  []string{gateway(c.PodCIDR).String()},
		ClusterDomain:               c.ClusterDomain,
		ContainerRuntimeEndpoint:    "unix://" + p.containerdSock(),
		ImageGCHighThresholdPercent: &hi,
		ImageGCLowThresholdPercent:  &lo,
		EvictionHard:                map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
		ResolverConfig:              strPtr("/etc/resolv.conf"),
		EnforceNodeAllocatable:      []string{"pods"},
		// Pods' logs in the state directory, not /var/log/pods, so that Down removes them.
		PodLogsDir: p.podLogs(),
	}
	return yaml.Marshal(kc)
}

// kubeProxyConfig runs kube-proxy in nftables mode (one table per family, which Down deletes)
// and masquerades all Service traffic, so that replies come back through the node even when a
// pod talks to a Service whose endpoint is on the same bridge, without changing the host's
// bridge-netfilter settings.
func (c Config) kubeProxyConfig(kubeconfig string) ([]byte, error) {
	t := true
	zero := int32(0)
	kc := proxyv1alpha1.KubeProxyConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: "kubeproxy.config.k8s.io/v1alpha1", Kind: "KubeProxyConfiguration"},
		ClientConnection:   componentbasev1alpha1.ClientConnectionConfiguration{Kubeconfig: kubeconfig},
		Mode:               "nftables",
		ClusterCIDR:        c.PodCIDR,
		HostnameOverride:   c.NodeName,
		BindAddress:        "0.0.0.0",
		HealthzBindAddress: "127.0.0.1:10256",
		MetricsBindAddress: "127.0.0.1:10249",
		Conntrack:          proxyv1alpha1.KubeProxyConntrackConfiguration{MaxPerCore: &zero, Min: &zero},
		NFTables:           proxyv1alpha1.KubeProxyNFTablesConfiguration{MasqueradeAll: t},
	}
	return yaml.Marshal(kc)
}

// corefile serves the cluster's names (Services, StatefulSet members through headless
// Services, pods) from the API server and forwards the rest to the host's resolver. CoreDNS
// runs on the node and listens on the bridge address kubelet gives pods as their DNS server.
func (c Config) corefile(kubeconfig string) string {
	bind := gateway(c.PodCIDR).String()
	return fmt.Sprintf(`%[1]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[2]s
    errors
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        kubeconfig %[3]s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
.:53 {
    bind %[2]s
    errors
    forward . /etc/resolv.conf
    cache 30
}
`, c.ClusterDomain, bind, kubeconfig)
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
