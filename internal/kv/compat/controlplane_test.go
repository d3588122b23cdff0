package compat

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/testenv"
)

// cpStore is a store a control plane runs on: real etcd (the specification), one continuum
// kv member, or a 3-member kv cluster with the apiserver on its first member.
type cpStore struct {
	name  string
	start func(t *testing.T) (apiserverOn *server, others []*server)
}

var cpStores = []cpStore{
	{"etcd", func(t *testing.T) (*server, []*server) { return etcdTarget.start(t, serverOptions{}), nil }},
	{"kv", func(t *testing.T) (*server, []*server) { return kvTarget.start(t, serverOptions{}), nil }},
	{"kv-3", func(t *testing.T) (*server, []*server) {
		if os.Getenv("CONTINUUM_COMPAT_KV") == "etcd" {
			t.Skip("CONTINUUM_COMPAT_KV=etcd: startKVCluster starts continuum kv only")
		}
		ms := startKVCluster(t, 3, nil)
		return ms[0], ms[1:]
	}},
}

// cpEnv is what a control-plane check gets: the control plane (shared by the checks of one
// store, each in a namespace of its own when it creates objects) and the store under it.
type cpEnv struct {
	ctx     context.Context
	cp      *controlplane.ControlPlane
	c       kubernetes.Interface
	dyn     dynamic.Interface
	store   *server
	members []*server // the other kv members (kv-3)
}

// cpCheck is one behaviour checked on every store. run fails t when the behaviour is wrong
// and returns a summary of what it saw, which must be the same on every store.
type cpCheck struct {
	name string
	run  func(t *testing.T, e *cpEnv) string
}

const cpCompactionInterval = time.Second

// startControlPlane starts kube-apiserver, kube-controller-manager and kube-scheduler on the
// store, stopped at cleanup (before the store, which was started first).
func startControlPlane(t *testing.T, store *server) *controlplane.ControlPlane {
	t.Helper()
	if _, err := controlplane.FindBinDir(); err != nil {
		requireOrSkip(t, err.Error())
	}
	cfg := controlplane.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.EtcdServers = []string{"http://" + store.endpoint}
	cfg.ControllerManager, cfg.Scheduler = true, true
	// The apiserver's compactor every second instead of every 5 minutes, so that the checks
	// run while the store is being compacted (the store_compacted check requires it was).
	cfg.APIServerArgs = []string{"--etcd-compaction-interval=" + cpCompactionInterval.String()}
	cp, err := controlplane.Start(testCtx(t, 2*time.Minute), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, b := range []string{controlplane.APIServerBinary, controlplane.ControllerManagerBinary, controlplane.SchedulerBinary} {
				t.Logf("%s log tail:\n%s", b, cp.LogTail(b, 15))
			}
		}
		cp.Stop()
	})
	return cp
}

// TestControlPlane runs kube-apiserver with its controller-manager and scheduler on etcd, on
// one kv member and on a 3-member kv cluster, runs the same checks on each and requires the
// same outcomes. One control plane per store is shared by all checks; the stores run side by
// side (most of a check's time is waiting for controllers, not CPU).
func TestControlPlane(t *testing.T) {
	t.Parallel()
	start := time.Now()
	var mu sync.Mutex
	outcomes := map[string]map[string]string{} // store -> check -> summary
	t.Run("stores", func(t *testing.T) {
		for _, st := range cpStores {
			t.Run(st.name, func(t *testing.T) {
				t.Parallel()
				runStore(t, st, &mu, outcomes)
			})
		}
	})
	t.Run("same_outcomes", func(t *testing.T) {
		want, ok := outcomes["etcd"]
		if !ok {
			t.Skip("no etcd outcomes to compare with")
		}
		for name, got := range outcomes {
			for _, ck := range cpChecks {
				if got[ck.name] != want[ck.name] {
					t.Errorf("%s on %s:\n  got  %s\n  etcd %s", ck.name, name, got[ck.name], want[ck.name])
				}
			}
		}
	})
	t.Logf("control-plane suite on %d stores: %v", len(outcomes), time.Since(start).Round(time.Millisecond))
}

// runStore starts the store and a control plane on it, runs every check in order and records
// their outcomes under the store's name.
func runStore(t *testing.T, st cpStore, mu *sync.Mutex, outcomes map[string]map[string]string) {
	stStart := time.Now()
	store, members := st.start(t)
	cp := startControlPlane(t, store)
	t.Logf("store and control plane up in %v", time.Since(stStart).Round(time.Millisecond))
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	e := &cpEnv{ctx: testCtx(t, 3*time.Minute), cp: cp, c: cp.Client(), dyn: dyn, store: store, members: members}
	got := map[string]string{}
	for _, ck := range cpChecks {
		t.Run(ck.name, func(t *testing.T) { got[ck.name] = ck.run(t, e) })
	}
	if len(members) > 0 {
		t.Run("replicated_to_other_members", func(t *testing.T) { checkReplicated(t, e) })
	}
	mu.Lock()
	outcomes[st.name] = got
	mu.Unlock()
	t.Logf("%s: checks done in %v", st.name, time.Since(stStart).Round(time.Millisecond))
}

// checkReplicated: what the apiserver wrote through the first member reaches the others (the
// Deployment's ReplicaSet and Pods, written by controllers, included).
func checkReplicated(t *testing.T, e *cpEnv) {
	for _, m := range e.members {
		c := m.client(t)
		testenv.EventuallyNoError(t, 30*time.Second, "objects on "+m.name, func() error {
			var missing []string
			for _, prefix := range []string{"/registry/deployments/cp-deploy/", "/registry/replicasets/cp-deploy/", "/registry/pods/cp-deploy/"} {
				r, err := c.Get(e.ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
				if err != nil {
					return err
				}
				if r.Count == 0 {
					missing = append(missing, prefix)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("no keys under %s", strings.Join(missing, ", "))
			}
			return nil
		})
	}
}

// summary renders a map in a stable order for comparing outcomes.
func summary(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}
