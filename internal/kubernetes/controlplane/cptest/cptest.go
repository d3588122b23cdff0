// Package cptest starts a Kubernetes control plane (package controlplane) for a test, on the
// etcd-API store the test brings: the skip-or-fail rule for missing binaries, the start, and the
// stop with the API server's log tail when the test failed, written once.
package cptest

import (
	"context"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/testenv"
)

// RequireBinaries skips the test when the Kubernetes binaries (make setup's .tools/bin) are
// missing, or fails it under CONTINUUM_REQUIRE_ROOT=1 (`make test`), so CI cannot pass by
// skipping.
func RequireBinaries(t testing.TB) {
	t.Helper()
	if _, err := controlplane.FindBinDir(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
}

// Start starts a control plane on etcdServers (RequireBinaries first) and stops it at cleanup.
func Start(t testing.TB, etcdServers []string) *controlplane.ControlPlane {
	t.Helper()
	RequireBinaries(t)
	cfg := controlplane.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.EtcdServers = etcdServers
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log tail:\n%s", cp.LogTail(controlplane.APIServerBinary, 20))
		}
		cp.Stop()
	})
	return cp
}
