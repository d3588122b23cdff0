package cluster

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var updateHostGolden = flag.Bool("update-host-golden", false, "rewrite testdata/host/* from the renderers")

// hostConfig is the one-node host cluster the golden files were rendered from.
func hostConfig() Config {
	cfg := DefaultConfig()
	cfg.BinDir, cfg.ContinuumBin = "/repo/.tools/bin", "/repo/bin/continuum"
	cfg.SandboxImage = "continuum.local/continuum:dev"
	return cfg
}

// TestHostRendersAsBefore: the one-node host cluster's files are byte for byte those of the
// renderers before they learned about nodes (testdata/host was written by them), so the
// per-node layer changes nothing for `continuum cluster up`.
func TestHostRendersAsBefore(t *testing.T) {
	cfg := hostConfig()
	n := cfg.hostNode()
	ca := "/var/lib/continuum/cluster/control-plane/pki/ca.crt"
	kc := func(who string) string { return "/var/lib/continuum/cluster/control-plane/" + who + ".kubeconfig" }
	must := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := map[string][]byte{
		"config.toml":           []byte(cfg.containerdConfig(n)),
		"10-continuum.conflist": must(cfg.cniConfig(n)),
		"kubelet.yaml":          must(cfg.kubeletConfig(n, ca)),
		"kube-proxy.yaml":       must(cfg.kubeProxyConfig(n, kc("kube-proxy"))),
		"Corefile":              []byte(cfg.corefile(n, kc("coredns"))),
	}
	for name, got := range files {
		path := filepath.Join("testdata", "host", name)
		if *updateHostGolden {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
		}
	}
	// kubelet's command line, as startKubelet wrote it out before kubeletArgs: no labels.
	root := cfg.StateDir
	want := []string{"/repo/.tools/bin/kubelet", "--config", root + "/kubelet/config.yaml", "--kubeconfig", kc("kubelet"),
		"--root-dir", root + "/kubelet", "--hostname-override", "continuum", "--node-ip", "10.244.0.1",
		"--cert-dir", root + "/kubelet/pki"}
	if got := cfg.kubeletArgs(n, root+"/kubelet/config.yaml", kc("kubelet")); !slices.Equal(got, want) {
		t.Errorf("kubelet argv\n got %q\nwant %q", got, want)
	}
	// What Up and the sweep derive from the host node, as before: the cgroup, the bridge, the
	// containerd socket ContainerdFor returns.
	if n.CgroupRoot != "/continuum-cluster" || n.Bridge != "continuum0" || n.PodCIDR.String() != "10.244.0.0/16" ||
		n.paths().containerdSock() != root+"/containerd/containerd.sock" || n.paths() != (paths{root}).host() {
		t.Errorf("host node %+v", n)
	}
}
