package cluster

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	proxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// testbedSpecs are n nodes as a testbed named lab would host them: nodes n1..nN (or the names
// given) at 10.77.0.1.., in namespaces ctm-lab-<name> and cgroups continuum/lab/<name>.
func testbedSpecs(n int, names ...string) []nodeSpec {
	specs := make([]nodeSpec, n)
	for i := range specs {
		name := fmt.Sprintf("n%d", i+1)
		if i < len(names) {
			name = names[i]
		}
		specs[i] = nodeSpec{Name: name, Netns: "ctm-lab-" + name, Addr: netip.AddrFrom4([4]byte{10, 77, 0, byte(i + 1)}),
			Cgroup: "continuum/lab/" + name, Labels: map[string]string{"tier": "edge"}}
	}
	return specs
}

// TestNodeConfigs: N nodes get distinct directories, sockets, pod CIDRs (node i the i-th /24),
// pod log directories, cgroup roots (inside their testbed node's cgroup) and bridges (at most 15
// bytes, also for long names sharing a beginning), and their labels plus continuum.io/node.
func TestNodeConfigs(t *testing.T) {
	long := []string{"edge-gateway-munich-0001", "edge-gateway-munich-0002", "edge-gateway-munich-0003",
		"edge-gateway-munich-0004", strings.Repeat("a", 32)} // 32: a topology's longest node name
	for _, tc := range []struct {
		name  string
		specs []nodeSpec
	}{
		{"1 node", testbedSpecs(1)},
		{"2 nodes", testbedSpecs(2, "edge", "cloud")},
		{"5 nodes", testbedSpecs(5)},
		{"5 long names", testbedSpecs(5, long...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hostConfig()
			nodes, err := cfg.nodeConfigs(tc.specs)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != len(tc.specs) {
				t.Fatalf("%d nodes for %d specs", len(nodes), len(tc.specs))
			}
			seen := map[string]string{}
			distinct := func(node, what, v string) {
				t.Helper()
				if other, dup := seen[what+" "+v]; dup {
					t.Errorf("nodes %s and %s share %s %s", other, node, what, v)
				}
				seen[what+" "+v] = node
			}
			for i, n := range nodes {
				s := tc.specs[i]
				p := n.paths()
				if n.Name != s.Name || n.Index != i || n.Netns != s.Netns || n.IP != s.Addr {
					t.Errorf("node %d: %+v from %+v", i, n, s)
				}
				if want := "/var/lib/continuum/cluster/nodes/" + s.Name; n.Dir != want {
					t.Errorf("node %s: dir %s, want %s", s.Name, n.Dir, want)
				}
				if want := fmt.Sprintf("10.244.%d.0/24", i); n.PodCIDR.String() != want {
					t.Errorf("node %s: pod CIDR %s, want %s", s.Name, n.PodCIDR, want)
				}
				if want := "/continuum/lab/" + s.Name + "/pods"; n.CgroupRoot != want {
					t.Errorf("node %s: cgroup root %s, want %s", s.Name, n.CgroupRoot, want)
				}
				if len(n.Bridge) > 15 || !strings.HasPrefix(n.Bridge, "cb-") {
					t.Errorf("node %s: bridge %q", s.Name, n.Bridge)
				}
				if n.Labels[nodeLabel] != s.Name || n.Labels["tier"] != "edge" || len(n.Labels) != 2 {
					t.Errorf("node %s: labels %v", s.Name, n.Labels)
				}
				for _, sock := range p.sockets() {
					if len(sock) > maxSocketPath || !strings.HasPrefix(sock, n.Dir+"/") {
						t.Errorf("node %s: socket %s", s.Name, sock)
					}
				}
				for what, v := range map[string]string{"dir": n.Dir, "containerd root": p.containerd(), "containerd socket": p.containerdSock(),
					"CNI conf dir": p.cniConf(), "host-local data dir": p.cniIPAM(), "kubelet root": p.kubelet(), "pod logs": p.podLogs(),
					"kube-proxy dir": p.kubeProxy(), "pod CIDR": n.PodCIDR.String(), "cgroup root": n.CgroupRoot, "bridge": n.Bridge} {
					distinct(s.Name, what, v)
				}
			}
			// The state records the nodes as JSON (for Down, after the supervisor is gone).
			b, err := json.Marshal(nodes)
			if err != nil {
				t.Fatal(err)
			}
			var back []nodeConfig
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(back) != fmt.Sprint(nodes) {
				t.Errorf("JSON round trip:\n got %+v\nwant %+v", back, nodes)
			}
		})
	}
}

// TestNodeConfigsRefused: what would break a node is refused, naming the node and what is wrong.
func TestNodeConfigsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cidr   string
		state  string
		change func([]nodeSpec) []nodeSpec
		want   []string
	}{
		{name: "bad label key", change: func(s []nodeSpec) []nodeSpec { s[1].Labels["bad key!"] = "x"; return s },
			want: []string{"node n2", `label "bad key!"`}},
		{name: "bad label value", change: func(s []nodeSpec) []nodeSpec { s[2].Labels["region"] = "eu west"; return s },
			want: []string{"node n3", `label region="eu west"`}},
		{name: "label value too long", change: func(s []nodeSpec) []nodeSpec { s[0].Labels["zone"] = strings.Repeat("z", 64); return s },
			want: []string{"node n1", "label zone=", "63"}},
		{name: "label kubelet may not set", change: func(s []nodeSpec) []nodeSpec {
			s[0].Labels["node-role.kubernetes.io/control-plane"] = ""
			return s
		}, want: []string{"node n1", "label node-role.kubernetes.io/control-plane", "node.kubernetes.io"}},
		{name: "node label of another node", change: func(s []nodeSpec) []nodeSpec { s[1].Labels[nodeLabel] = "n1"; return s },
			want: []string{"node n2", "label continuum.io/node=n1"}},
		{name: "pod CIDR too small", cidr: "10.244.0.0/23",
			want: []string{"pod CIDR 10.244.0.0/23", "holds 2 /24s", "3 nodes", "/22"}},
		{name: "pod CIDR a /24 for 3 nodes", cidr: "10.244.7.0/24",
			want: []string{"pod CIDR 10.244.7.0/24", "holds 1 /24s", "3 nodes", "/22"}},
		{name: "no nodes", change: func([]nodeSpec) []nodeSpec { return nil }, want: []string{"no nodes"}},
		{name: "name twice", change: func(s []nodeSpec) []nodeSpec { s[2].Name = "n1"; return s },
			want: []string{`node "n1"`, "twice"}},
		{name: "name not a DNS label", change: func(s []nodeSpec) []nodeSpec { s[0].Name = "Edge_1"; return s },
			want: []string{`node "Edge_1"`, "DNS label"}},
		{name: "no address", change: func(s []nodeSpec) []nodeSpec { s[1].Addr = netip.Addr{}; return s },
			want: []string{"node n2", "IPv4"}},
		{name: "address in the pod CIDR", change: func(s []nodeSpec) []nodeSpec { s[1].Addr = netip.MustParseAddr("10.244.3.7"); return s },
			want: []string{"node n2", "10.244.3.7", "pod CIDR 10.244.0.0/16"}},
		{name: "address in the service CIDR", change: func(s []nodeSpec) []nodeSpec { s[1].Addr = netip.MustParseAddr("10.96.0.9"); return s },
			want: []string{"node n2", "10.96.0.9", "service CIDR"}},
		{name: "cgroup outside the hierarchy", change: func(s []nodeSpec) []nodeSpec { s[0].Cgroup = "../n1"; return s },
			want: []string{"node n1", `cgroup "../n1"`}},
		{name: "socket path too long", state: "/var/lib/" + strings.Repeat("d", 60),
			want: []string{"node n1", "socket", "over the 107"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hostConfig()
			if tc.cidr != "" {
				cfg.PodCIDR = tc.cidr
			}
			if tc.state != "" {
				cfg.StateDir = tc.state
			}
			specs := testbedSpecs(3)
			if tc.change != nil {
				specs = tc.change(specs)
			}
			_, err := cfg.nodeConfigs(specs)
			if err == nil {
				t.Fatalf("no error, want one with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestNodePodCIDRs: node i gets the i-th /24, up to as many as the cluster's CIDR holds.
func TestNodePodCIDRs(t *testing.T) {
	for _, tc := range []struct {
		cidr  string
		nodes int
		want  []string
		err   string
	}{
		{"10.244.0.0/16", 3, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}, ""},
		{"10.244.4.0/22", 4, []string{"10.244.4.0/24", "10.244.5.0/24", "10.244.6.0/24", "10.244.7.0/24"}, ""},
		{"10.244.9.0/24", 1, []string{"10.244.9.0/24"}, ""},
		{"10.254.0.0/15", 257, nil, ""}, // carries into the second octet: checked below
		{"10.244.4.0/22", 5, nil, "holds 4 /24s"},
		{"10.244.0.0/25", 1, nil, "at most /24"},
		{"10.244.0.1/16", 1, nil, "host bits"},
	} {
		got, err := nodePodCIDRs(tc.cidr, tc.nodes)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s for %d nodes: %v, want an error with %q", tc.cidr, tc.nodes, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s for %d nodes: %v", tc.cidr, tc.nodes, err)
			continue
		}
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if tc.want != nil && !slices.Equal(s, tc.want) {
			t.Errorf("%s for %d nodes: %v, want %v", tc.cidr, tc.nodes, s, tc.want)
		}
		if len(s) != tc.nodes {
			t.Errorf("%s: %d CIDRs for %d nodes", tc.cidr, len(s), tc.nodes)
		}
		if tc.nodes == 257 && (s[255] != "10.254.255.0/24" || s[256] != "10.255.0.0/24") {
			t.Errorf("%s: node 255 %s, node 256 %s", tc.cidr, s[255], s[256])
		}
	}
}

// TestBridgeName: bridge names fit an interface name and stay distinct for names that share
// their beginning.
func TestBridgeName(t *testing.T) {
	for _, tc := range []struct{ node, want string }{
		{"edge", "cb-edge"},
		{"abcdefghijkl", "cb-abcdefghijkl"}, // 15 bytes: as is
	} {
		if got := bridgeName(tc.node); got != tc.want {
			t.Errorf("bridgeName(%q) = %q, want %q", tc.node, got, tc.want)
		}
	}
	seen := map[string]string{}
	for i := range 1000 {
		node := fmt.Sprintf("edge-gateway-%04d", i)
		b := bridgeName(node)
		if len(b) > 15 || !strings.HasPrefix(b, "cb-edge-g-") {
			t.Fatalf("bridgeName(%q) = %q", node, b)
		}
		if other, dup := seen[b]; dup {
			t.Fatalf("%s and %s both get bridge %s", other, node, b)
		}
		seen[b] = node
	}
}

// TestNodeRenders: each node's containerd, CNI, kubelet, kube-proxy and CoreDNS configuration
// names the node's own paths, socket, subnet, bridge, cgroup root, address and name, and no
// other node's; a node in a namespace gets no forwarding to the host's resolver, and kubelet its
// labels.
func TestNodeRenders(t *testing.T) {
	cfg := hostConfig()
	nodes, err := cfg.nodeConfigs(testbedSpecs(3, "device", "edge", "cloud"))
	if err != nil {
		t.Fatal(err)
	}
	kc := "/var/lib/continuum/cluster/control-plane/x.kubeconfig"
	rendered := map[string]string{}
	for _, n := range nodes {
		p := n.paths()
		var all strings.Builder
		ctd := cfg.containerdConfig(n)
		all.WriteString(ctd)
		for _, want := range []string{
			fmt.Sprintf("root = %q", p.containerd()+"/root"), fmt.Sprintf("state = %q", p.containerd()+"/state"),
			fmt.Sprintf("address = %q", p.containerdSock()), fmt.Sprintf("conf_dir = %q", p.cniConf()),
		} {
			if !strings.Contains(ctd, want) {
				t.Errorf("node %s: containerd config lacks %s:\n%s", n.Name, want, ctd)
			}
		}

		b, err := cfg.cniConfig(n)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		var cni struct {
			Plugins []struct {
				Bridge string
				IPAM   struct {
					Ranges  [][]struct{ Subnet, Gateway string }
					DataDir string
				}
			}
		}
		if err := json.Unmarshal(b, &cni); err != nil {
			t.Fatal(err)
		}
		br := cni.Plugins[0]
		if br.Bridge != n.Bridge || br.IPAM.Ranges[0][0].Subnet != n.PodCIDR.String() ||
			br.IPAM.Ranges[0][0].Gateway != n.gateway().String() || br.IPAM.DataDir != p.cniIPAM() {
			t.Errorf("node %s: CNI %s", n.Name, b)
		}

		b, err = cfg.kubeletConfig(n, "/ca.crt")
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		var kl kubeletv1beta1.KubeletConfiguration
		if err := yaml.UnmarshalStrict(b, &kl); err != nil {
			t.Fatal(err)
		}
		if kl.CgroupRoot != n.CgroupRoot || kl.PodLogsDir != p.podLogs() || kl.Address != n.IP.String() ||
			!slices.Equal(kl.ClusterDNS, []string{n.gateway().String()}) || kl.ContainerRuntimeEndpoint != "unix://"+p.containerdSock() {
			t.Errorf("node %s: kubelet config\n%s", n.Name, b)
		}
		argv := cfg.kubeletArgs(n, p.kubelet()+"/config.yaml", kc)
		all.WriteString(strings.Join(argv, " "))
		line := strings.Join(argv, " ")
		for _, want := range []string{"--root-dir " + p.kubelet() + " ", "--hostname-override " + n.Name + " ",
			"--node-ip " + n.IP.String() + " ", "--node-labels continuum.io/node=" + n.Name + ",tier=edge"} {
			if !strings.Contains(line+" ", want) {
				t.Errorf("node %s: kubelet argv %q lacks %q", n.Name, line, want)
			}
		}

		b, err = cfg.kubeProxyConfig(n, kc)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		var kp proxyv1alpha1.KubeProxyConfiguration
		if err := yaml.UnmarshalStrict(b, &kp); err != nil {
			t.Fatal(err)
		}
		if kp.HostnameOverride != n.Name || kp.ClusterCIDR != cfg.PodCIDR {
			t.Errorf("node %s: kube-proxy hostname %s, cluster CIDR %s", n.Name, kp.HostnameOverride, kp.ClusterCIDR)
		}

		cf := cfg.corefile(n, kc)
		all.WriteString(cf)
		if !strings.Contains(cf, "bind "+n.gateway().String()+"\n") || strings.Contains(cf, "forward") {
			t.Errorf("node %s: Corefile\n%s", n.Name, cf)
		}
		rendered[n.Name] = all.String()
	}
	// No node's files name another node's directory, subnet, bridge or cgroup.
	for _, n := range nodes {
		for _, o := range nodes {
			if o.Name == n.Name {
				continue
			}
			for _, v := range []string{o.Dir + "/", o.PodCIDR.String(), `"` + o.Bridge + `"`, o.CgroupRoot + "\n", o.gateway().String() + "\n"} {
				if strings.Contains(rendered[n.Name], v) {
					t.Errorf("node %s's files name node %s's %q", n.Name, o.Name, v)
				}
			}
		}
	}
}

// TestControlPlaneNode: an explicit choice wins (an unknown one is refused, naming the nodes),
// then the first node labelled tier=cloud, then the node named cloud, then the first node.
func TestControlPlaneNode(t *testing.T) {
	node := func(name string, labels ...string) nodeSpec {
		s := nodeSpec{Name: name, Labels: map[string]string{}}
		for i := 0; i+1 < len(labels); i += 2 {
			s.Labels[labels[i]] = labels[i+1]
		}
		return s
	}
	threeTier := []nodeSpec{node("device"), node("edge"), node("cloud")}
	proxy := []nodeSpec{node("master", "tier", "cloud"), node("worker1", "tier", "near-edge"), node("iot", "tier", "device")}
	for _, tc := range []struct {
		name     string
		nodes    []nodeSpec
		explicit string
		want     string
		err      string
	}{
		{"explicit", threeTier, "edge", "edge", ""},
		{"explicit over the label", proxy, "iot", "iot", ""},
		{"explicit unknown", threeTier, "fog", "", `control plane node "fog": no such node (the nodes are device, edge, cloud)`},
		{"tier label", proxy, "", "master", ""},
		{"first tier=cloud", []nodeSpec{node("a"), node("b", "tier", "cloud"), node("c", "tier", "cloud")}, "", "b", ""},
		{"label over the name", []nodeSpec{node("cloud"), node("dc", "tier", "cloud")}, "", "dc", ""},
		{"another key's cloud is not a tier", []nodeSpec{node("a"), node("b", "fl/type", "cloud")}, "", "a", ""},
		{"named cloud", threeTier, "", "cloud", ""},
		{"first", []nodeSpec{node("n1"), node("n2")}, "", "n1", ""},
		{"one node", []nodeSpec{node("solo")}, "", "solo", ""},
		{"no nodes", nil, "", "", "no nodes"},
	} {
		got, err := controlPlaneNode(tc.nodes, tc.explicit)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestNodeGracePeriodLease: a node grace period gives the kubelets leases of 4/5 of it (as
// Kubernetes' 40 s are of its 50 s); without one the kubelet keeps its default.
func TestNodeGracePeriodLease(t *testing.T) {
	cfg := hostConfig()
	nodes, err := cfg.nodeConfigs(testbedSpecs(1, "edge"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		grace time.Duration
		want  int32
	}{{0, 0}, {10 * time.Second, 8}, {50 * time.Second, 40}, {5 * time.Second, 4}} {
		cfg.NodeGracePeriod = tc.grace
		b, err := cfg.kubeletConfig(nodes[0], "/ca.crt")
		if err != nil {
			t.Fatal(err)
		}
		var kl kubeletv1beta1.KubeletConfiguration
		if err := yaml.UnmarshalStrict(b, &kl); err != nil {
			t.Fatal(err)
		}
		if kl.NodeLeaseDurationSeconds != tc.want {
			t.Errorf("grace period %v: lease %d s, want %d", tc.grace, kl.NodeLeaseDurationSeconds, tc.want)
		}
	}
}
