package kvprefix

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

const prefix = "/continuum/services/"

// TestSnapshots: records present before Run make the first snapshot; later puts and deletes
// make the following ones. Each backend runs the same steps.
func TestSnapshots(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ep := b.start(t)
			cli := newClient(t, ep)
			ctx := ctxT(t)
			for k, v := range map[string]string{
				prefix + "dps/s1":          `{"url": "http://10.0.0.1:8080", "node": "worker1", "attributes": {"accuracy": 0.97, "tier": "edge", "gpu": true}}`,
				prefix + "dps/s2":          `{"id": "s2", "service": "dps", "url": "http://10.0.0.2:8080", "ready": false}`,
				prefix + "web/ns/pod-1":    `{"url": "https://10.0.1.1:8443"}`,
				prefix + "dps/bad":         `{"url": "http://10.0.0.9:8080", "adress": "x"}`,
				prefix + "dps":             `{"url": "http://10.0.0.8:8080"}`,
				prefix + "_nodes/worker1":  `{"cpu": 0.5, "memory": 0.25}`,
				prefix + "_nodes/worker2":  `{"cpu": -1}`,
				"/continuum/servicesX/a/b": `{"url": "http://10.9.9.9:1"}`,
				"/continuum/other/dps/s3":  `{"url": "http://10.9.9.9:1"}`,
			} {
				if _, err := cli.Put(ctx, k, v); err != nil {
					t.Fatal(err)
				}
			}
			src, logs := newSource(t, ep, prefix)
			r := runSource(t, src, logs)
			got := r.Next()
			want := discovery.Snapshot{
				Instances: []discovery.Instance{
					{ID: "s1", Service: "dps", URL: "http://10.0.0.1:8080", Node: "worker1",
						Attributes: map[string]string{"accuracy": "0.97", "tier": "edge", "gpu": "true"}, Ready: true},
					{ID: "s2", Service: "dps", URL: "http://10.0.0.2:8080", Ready: false},
					{ID: "ns/pod-1", Service: "web", URL: "https://10.0.1.1:8443", Ready: true},
				},
				Nodes: map[string]discovery.NodeLoad{"worker1": {CPU: 0.5, Memory: 0.25}},
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("first snapshot:%s\nwant:%s", dump(got), dump(want))
			}
			for _, w := range []string{
				`key=/continuum/services/dps/bad err="unknown field \"adress\"`,
				`key=/continuum/services/dps err="want a key`,
				`key=/continuum/services/_nodes/worker2 err="cpu -1: want a fraction >= 0`,
			} {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("logs lack %q:\n%s", w, logs)
				}
			}

			steps := []struct {
				name string
				put  map[string]string
				del  []string
				want func(discovery.Snapshot) bool
			}{{
				name: "a new instance",
				put:  map[string]string{prefix + "dps/s3": `{"url": "http://10.0.0.3:8080", "node": "worker3"}`},
				want: func(s discovery.Snapshot) bool {
					in, ok := find(s, "dps", "s3")
					return ok && in.Ready && in.Node == "worker3"
				},
			}, {
				name: "readiness drops",
				put:  map[string]string{prefix + "dps/s1": `{"url": "http://10.0.0.1:8080", "ready": false}`},
				want: func(s discovery.Snapshot) bool {
					in, ok := find(s, "dps", "s1")
					return ok && !in.Ready && in.Attributes == nil
				},
			}, {
				name: "a record turns invalid: the instance leaves",
				put:  map[string]string{prefix + "dps/s2": `{"url": "ftp://10.0.0.2"}`},
				want: func(s discovery.Snapshot) bool { _, ok := find(s, "dps", "s2"); return !ok },
			}, {
				name: "delete",
				del:  []string{prefix + "dps/s3"},
				want: func(s discovery.Snapshot) bool { _, ok := find(s, "dps", "s3"); return !ok && len(s.Instances) == 2 },
			}, {
				name: "node loads change and go",
				put:  map[string]string{prefix + "_nodes/worker2": `{"cpu": 1.5}`},
				del:  []string{prefix + "_nodes/worker1"},
				want: func(s discovery.Snapshot) bool {
					return reflect.DeepEqual(s.Nodes, map[string]discovery.NodeLoad{"worker2": {CPU: 1.5}})
				},
			}, {
				name: "writes outside the prefix are not seen",
				put: map[string]string{"/continuum/other/x/y": `{"url": "http://10.9.9.9:1"}`,
					prefix + "late/l1": `{"url": "http://10.0.0.7:8080"}`},
				want: func(s discovery.Snapshot) bool {
					_, late := find(s, "late", "l1")
					_, x := find(s, "x", "y")
					return late && !x
				},
			}}
			for _, st := range steps {
				// One transaction per step, so the source sees it in one watch response.
				var ops []clientv3.Op
				for k, v := range st.put {
					ops = append(ops, clientv3.OpPut(k, v))
				}
				for _, k := range st.del {
					ops = append(ops, clientv3.OpDelete(k))
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				r.WaitFor(st.name, st.want)
			}
			if !strings.Contains(logs.String(), `key=/continuum/services/dps/s2 err="url:`) {
				t.Errorf("invalid update not logged:\n%s", logs)
			}
		})
	}
}

// TestPagedList: a registry larger than a page is read whole, at one revision.
func TestPagedList(t *testing.T) {
	t.Parallel()
	ep := startKV(t)
	cli := newClient(t, ep)
	ctx := ctxT(t)
	const n = 7
	for i := range n {
		if _, err := cli.Put(ctx, fmt.Sprintf("%ssvc/i%d", prefix, i), fmt.Sprintf(`{"url": "http://10.0.0.%d:80"}`, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	src, logs := newSource(t, ep, prefix)
	src.pageSize = 2
	if got := runSource(t, src, logs).Next(); len(got.Instances) != n {
		t.Fatalf("%d instances, want %d:%s", len(got.Instances), n, dump(got))
	}
}

// TestCompactedWatchRelists: changes made between the list and the watch, with the revision
// after the list compacted away, still reach the snapshot through a second list.
func TestCompactedWatchRelists(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ep := b.start(t)
			cli := newClient(t, ep)
			ctx := ctxT(t)
			src, logs := newSource(t, ep, prefix)
			var once sync.Once
			src.afterList = func() {
				once.Do(func() {
					if _, err := cli.Put(ctx, prefix+"dps/s1", `{"url": "http://10.0.0.1:8080"}`); err != nil {
						t.Error(err)
					}
					resp, err := cli.Put(ctx, prefix+"dps/s2", `{"url": "http://10.0.0.2:8080"}`)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
						t.Error(err)
					}
				})
			}
			r := runSource(t, src, logs)
			if s := r.Next(); len(s.Instances) != 0 {
				t.Fatalf("first snapshot:%s", dump(s))
			}
			r.WaitFor("both records", func(s discovery.Snapshot) bool { return len(s.Instances) == 2 })
			waitLog(t, logs, "compacted; listing again")
			// The new watch works.
			if _, err := cli.Delete(ctx, prefix+"dps/s1"); err != nil {
				t.Fatal(err)
			}
			r.WaitFor("s1 deleted", func(s discovery.Snapshot) bool { return len(s.Instances) == 1 })
		})
	}
}

// TestLeaseExpiry: a record put with a lease that nobody keeps alive leaves the snapshot when
// the lease expires; this is how a crashed service leaves the registry.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ep := b.start(t)
			cli := newClient(t, ep)
			ctx := ctxT(t)
			lease, err := cli.Grant(ctx, 1) // servers round up to their minimum TTL
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, prefix+"dps/s1", `{"url": "http://10.0.0.1:8080"}`, clientv3.WithLease(lease.ID)); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, prefix+"dps/s2", `{"url": "http://10.0.0.2:8080"}`); err != nil {
				t.Fatal(err)
			}
			src, logs := newSource(t, ep, prefix)
			r := runSource(t, src, logs)
			if s := r.Next(); len(s.Instances) != 2 {
				// The lease may already have expired on a slow machine; then s1 must be absent.
				if _, ok := find(s, "dps", "s1"); ok || len(s.Instances) != 1 {
					t.Fatalf("first snapshot:%s", dump(s))
				}
				return
			}
			r.WaitFor("s1 expired", func(s discovery.Snapshot) bool {
				_, s1 := find(s, "dps", "s1")
				_, s2 := find(s, "dps", "s2")
				return !s1 && s2
			})
		})
	}
}

// TestKVRestart: the source rides out a restart of the server (same data, same address): it
// keeps its snapshot while the server is down and sees writes made after it is back.
func TestKVRestart(t *testing.T) {
	dir := t.TempDir()
	srv := kvtest.Start(t, kvtest.At(dir, "127.0.0.1:0"))
	addr := strings.TrimPrefix(srv.ClientURLs()[0], "http://")
	cli := newClient(t, addr)
	ctx := ctxT(t)
	if _, err := cli.Put(ctx, prefix+"dps/s1", `{"url": "http://10.0.0.1:8080"}`); err != nil {
		t.Fatal(err)
	}
	src, logs := newSource(t, addr, prefix)
	r := runSource(t, src, logs)
	if s := r.Next(); len(s.Instances) != 1 {
		t.Fatalf("first snapshot:%s", dump(s))
	}
	srv.Close()
	kvtest.Start(t, kvtest.At(dir, addr)) // closed at cleanup
	if _, err := cli.Put(ctx, prefix+"dps/s2", `{"url": "http://10.0.0.2:8080"}`); err != nil {
		t.Fatal(err)
	}
	r.WaitFor("s2 after the restart", func(s discovery.Snapshot) bool {
		_, s1 := find(s, "dps", "s1")
		_, s2 := find(s, "dps", "s2")
		return s1 && s2
	})
}

// TestUnreachable: no server at all. Run logs, delivers nothing, keeps retrying and stops
// promptly when cancelled.
func TestUnreachable(t *testing.T) {
	src, logs := newSource(t, "127.0.0.1:1", prefix)
	src.cfg.DialTimeout.Duration = 200 * time.Millisecond
	r := runSource(t, src, logs)
	waitLog(t, logs, "kv list failed; keeping the last snapshot and retrying")
	if s, ok := r.Pending(); ok {
		t.Fatalf("snapshot without a server:%s", dump(s))
	}
}

// TestGivenClient: a client passed to New is used and left open.
func TestGivenClient(t *testing.T) {
	ep := startKV(t)
	cli := newClient(t, ep)
	if _, err := cli.Put(ctxT(t), prefix+"dps/s1", `{"url": "http://10.0.0.1:8080"}`); err != nil {
		t.Fatal(err)
	}
	src, err := New(Config{Prefix: prefix}, cli)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	got := make(chan discovery.Snapshot, 1)
	go func() {
		done <- src.Run(ctx, func(s discovery.Snapshot) {
			select {
			case got <- s:
			default:
			}
		})
	}()
	select {
	case s := <-got:
		if len(s.Instances) != 1 {
			t.Fatalf("snapshot:%s", dump(s))
		}
	case <-time.After(waitTimeout):
		t.Fatal("no snapshot")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after cancel")
	}
	if _, err := cli.Get(ctxT(t), "x"); err != nil {
		t.Fatalf("client closed by Run: %v", err)
	}
}
