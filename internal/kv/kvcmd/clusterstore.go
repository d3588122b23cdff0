package kvcmd

import (
	"errors"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
)

// A one-node cluster's control plane can run on continuum kv (`continuum cluster up --store
// kv`, the default): one member, its command line rendered from the same flag declaration as
// the kv kind's (cli.Args), so the cluster never spells a kv flag itself.
func init() {
	clusterstore.Register(clusterstore.Store{
		Name:    "kv",
		Summary: "a continuum kv member",
		Command: func(a clusterstore.Args) ([]string, error) {
			if a.ContinuumBin == "" {
				return nil, errors.New("continuum binary: required with store kv")
			}
			f := DefaultFlags()
			f.Server.Name = "cluster"
			f.Server.DataDir = a.DataDir
			f.ListenClientURLs = a.ClientURL
			f.ListenMetricsURLs = a.MetricsURL
			return append([]string{a.ContinuumBin, "kv"}, cli.Args(DefaultFlags(), f)...), nil
		},
		Is: func(argv []string) bool { return len(argv) > 1 && argv[1] == "kv" },
	})
}
