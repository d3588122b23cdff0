package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"

	// The stores the control plane runs on, registered by the systems that provide them.
	_ "github.com/continuum-project/continuum/internal/baselines/baselinescmd"
	_ "github.com/continuum-project/continuum/internal/kv/kvcmd"
)

// TestStoreRegistry: the cluster knows its stores only from the registry: kv and etcd are
// there once their systems are linked, their command lines put the data in the state dir's
// store and serve /health where the cluster waits for it, the sweep recognizes their members,
// and an unknown store or a missing binary is named by Validate.
func TestStoreRegistry(t *testing.T) {
	if got := clusterstore.Names(); !slices.Equal(got, []string{"etcd", "kv"}) {
		t.Fatalf("stores %v, want etcd and kv", got)
	}
	cfg := DefaultConfig()
	cfg.BinDir, cfg.ContinuumBin, cfg.SandboxImage = "/tools/bin", "/bin/continuum", "pause"
	for _, name := range []string{"kv", "etcd"} {
		st, err := clusterstore.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		argv, err := st.Command(cfg.storeArgs("/s/store", "http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"))
		if err != nil {
			t.Fatal(err)
		}
		line := strings.Join(argv, " ")
		for _, want := range []string{"/s/store", "http://127.0.0.1:1", "http://127.0.0.1:2"} {
			if !strings.Contains(line, want) {
				t.Errorf("%s: %q lacks %s", name, line, want)
			}
		}
		if !isStore(argv) || !isDaemon(argv, "/s") {
			t.Errorf("%s: the sweep does not recognize %q", name, line)
		}
		cfg.Store = name
		if err := cfg.Validate(); err != nil {
			t.Errorf("store %s: %v", name, err)
		}
	}
	cfg.Store = "zookeeper"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "[etcd kv]") {
		t.Errorf("unknown store: %v, want the registered ones named", err)
	}
	cfg.Store, cfg.ContinuumBin = "kv", ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "continuum binary") {
		t.Errorf("kv without the binary: %v", err)
	}
}
