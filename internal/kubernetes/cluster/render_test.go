package cluster

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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
		"config.toml":           []byte(cfg.containerdConfig()),
		"10-continuum.conflist": must(cfg.cniConfig()),
		"kubelet.yaml":          must(cfg.kubeletConfig(ca)),
		"kube-proxy.yaml":       must(cfg.kubeProxyConfig(kc("kube-proxy"))),
		"Corefile":              []byte(cfg.corefile(kc("coredns"))),
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
}
