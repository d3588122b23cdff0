package baselinescmd

import (
	"errors"
	"path/filepath"

	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
)

// A one-node cluster's control plane can run on real etcd (`continuum cluster up --store etcd`):
// one member from the BinDir `make setup` links etcd into.
func init() {
	clusterstore.Register(clusterstore.Store{
		Name:    "etcd",
		Summary: "an etcd member from the bin dir",
		Command: func(a clusterstore.Args) ([]string, error) {
			if a.BinDir == "" {
				return nil, errors.New("bin dir: required with store etcd (it holds etcd)")
			}
			return []string{filepath.Join(a.BinDir, "etcd"), "--name", "cluster", "--data-dir", a.DataDir,
				"--listen-client-urls", a.ClientURL, "--advertise-client-urls", a.ClientURL, "--listen-metrics-urls", a.MetricsURL,
				"--listen-peer-urls", a.PeerURL, "--initial-advertise-peer-urls", a.PeerURL, "--initial-cluster", "cluster=" + a.PeerURL}, nil
		},
		Is: func(argv []string) bool { return len(argv) > 0 && filepath.Base(argv[0]) == "etcd" },
	})
}
