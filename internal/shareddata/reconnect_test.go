package shareddata

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestSubscriptionSurvivesRestart: the server a subscriber talks to restarts (same address,
// same data), shut down cleanly or killed with SIGKILL. The subscription must resume by itself
// and deliver what is published after the restart, with nothing delivered twice or skipped.
func TestSubscriptionSurvivesRestart(t *testing.T) {
	t.Parallel() // its own servers (startServer), never the shared cluster
	for _, c := range []struct {
		backend, how string
	}{{BackendKV, "restart"}, {BackendEtcd, "restart"}, {BackendRedis, "restart"}, {BackendKV, "kill"}, {BackendEtcd, "kill"}, {BackendRedis, "kill"}} {
		backend := c.backend
		t.Run(backend+"/"+c.how, func(t *testing.T) {
			cfg, srv := startServer(t, backend)
			s := openT(t, cfg)
			ctx := ctxT(t)
			sub, err := s.SubscribeMetrics(ctx, "restart", "")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if err := s.PublishMetrics(ctx, "restart", "p", []byte("before")); err != nil {
				t.Fatal(err)
			}
			nextIs(t, sub, "p", "before")
			restart := srv.Restart
			if c.how == "kill" {
				restart = srv.Crash
			}
			if err := restart(ctx); err != nil {
				t.Fatal(err)
			}
			// The publisher's client reconnects too; a publish may fail until it has.
			for i := 0; i < 3; i++ {
				v := []byte("after" + strconv.Itoa(i))
				testenv.EventuallyNoError(t, 30*time.Second, "publish after restart", func() error {
					pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					defer cancel()
					return s.PublishMetrics(pctx, "restart", "p", v)
				})
			}
			for i := 0; i < 3; i++ {
				nextIs(t, sub, "p", "after"+strconv.Itoa(i))
			}
		})
	}
}

// TestGapIsReported: a subscriber resumes from a cursor whose history the backend no longer
// holds. It must get a Gap message first, then what is still there, in order.
func TestGapIsReported(t *testing.T) {
	for _, backend := range Backends {
		t.Run(backend, func(t *testing.T) {
			cfg := startBackend(t, backend)
			cfg.StreamRetention = 10
			s := openT(t, cfg)
			ctx := ctxT(t)
			first, err := s.SubscribeMetrics(ctx, "gap", "")
			if err != nil {
				t.Fatal(err)
			}
			const n = 300
			for i := 0; i < n; i++ {
				if err := s.PublishMetrics(ctx, "gap", "p", fmt.Appendf(nil, "v%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			cursor := nextIs(t, first, "p", "v0").Cursor
			first.Close()
			if backend == BackendKV || backend == BackendEtcd {
				// etcd and kv keep history until it is compacted.
				cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints})
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				resp, err := cli.Get(ctx, "x")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
					t.Fatal(err)
				}
			}
			sub, err := s.SubscribeMetrics(ctx, "gap", cursor)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if m := recv(t, sub); !m.Gap {
				t.Fatalf("first message after lost history: %+v, want a gap", m)
			}
			// Then what is still held, in order, ending with the newest.
			prev := -1
			for prev != n-1 {
				m := recv(t, sub)
				var i int
				if _, err := fmt.Sscanf(string(m.Value), "v%d", &i); err != nil || m.Gap || i <= prev {
					t.Fatalf("after v%d got %+v", prev, m)
				}
				prev = i
			}
		})
	}
}

// TestRedisClusterSurvivesMasterLoss: the master holding a group's metrics stream dies. Once
// its replica has taken over, publishing works again through the same Store and the running
// subscription delivers what is published, without the application doing anything.
func TestRedisClusterSurvivesMasterLoss(t *testing.T) {
	t.Parallel() // its own servers (startServer), never the shared cluster
	c := baselinetest.StartRedisCluster(t)
	cfg := Config{Backend: BackendRedisCluster, Endpoints: c.Addrs}
	s := openT(t, cfg)
	ctx := ctxT(t)
	sub, err := s.SubscribeMetrics(ctx, "loss", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.PublishMetrics(ctx, "loss", "p", []byte("before")); err != nil {
		t.Fatal(err)
	}
	nextIs(t, sub, "p", "before")
	master, err := s.(*redisStore).rdb.(*redis.ClusterClient).MasterForKey(ctx, redisMetricsStream("loss"))
	if err != nil {
		t.Fatal(err)
	}
	addr := master.Options().Addr
	killed := false
	for i, a := range c.Addrs {
		if a == addr {
			_ = c.Servers[i].Stop()
			killed = true
		}
	}
	if !killed {
		t.Fatalf("master %s of the stream is not one of %v", addr, c.Addrs)
	}
	testenv.EventuallyNoError(t, 30*time.Second, "publish after the master's loss", func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return s.PublishMetrics(pctx, "loss", "p", []byte("after"))
	})
	for {
		m := recv(t, sub)
		if m.Gap {
			continue // what the lost master had not replicated
		}
		if string(m.Value) == "after" {
			break
		}
	}
	if sub.Reconnects() == 0 {
		t.Error("the subscription never lost its stream: was the right master killed?")
	}
}

// TestStatePushSurvivesKill: a consumer pushes to its state queue (capacity 5) without pause
// while the server is killed with SIGKILL and started again. StatePush is one atomic step, so
// the queue it leaves is whole: 5 entries in push order, head and tail agreeing with them, and
// every acknowledged push among them present (an acknowledged write survives a process kill on
// every backend: kv and etcd fsync before acknowledging, Redis writes its AOF before replying).
// The seed's separate steps could leave indices pointing past a deleted entry here.
func TestStatePushSurvivesKill(t *testing.T) {
	t.Parallel() // its own servers (startServer), never the shared cluster
	for _, backend := range []string{BackendKV, BackendEtcd, BackendRedis} {
		t.Run(backend, func(t *testing.T) {
			cfg, srv := startServer(t, backend)
			s := openT(t, cfg)
			ctx := ctxT(t)
			const capacity = 5
			var mu sync.Mutex
			var acked []int
			ackedCount := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(acked)
			}
			stop, stopped := make(chan struct{}), make(chan error, 1)
			go func() {
				for v := 1; ; v++ {
					select {
					case <-stop:
						stopped <- nil
						return
					default:
					}
					pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					q, err := s.StatePush(pctx, "c1", capacity, []byte(strconv.Itoa(v)))
					cancel()
					if err != nil {
						time.Sleep(10 * time.Millisecond) // the server is down; the client reconnects
						continue
					}
					if len(q) == 0 || len(q) > capacity || string(q[len(q)-1]) != strconv.Itoa(v) {
						stopped <- fmt.Errorf("push %d returned queue %q", v, q)
						return
					}
					mu.Lock()
					acked = append(acked, v)
					mu.Unlock()
				}
			}()
			waitAcked := func(n int) {
				t.Helper()
				testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d acknowledged pushes", n), func() bool { return ackedCount() >= n })
			}
			waitAcked(20)
			if err := srv.Crash(ctx); err != nil {
				t.Fatal(err)
			}
			waitAcked(ackedCount() + 20)
			close(stop)
			if err := <-stopped; err != nil {
				t.Fatal(err)
			}

			q, err := s.StateRead(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			head, tail, err := s.StateIndices(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if len(q) != capacity || head-tail != capacity {
				t.Fatalf("queue %q with head %d tail %d; want %d entries and head-tail = %d", q, head, tail, capacity, capacity)
			}
			var vals []int
			for _, e := range q {
				v, err := strconv.Atoi(string(e))
				if err != nil {
					t.Fatalf("queue entry %q is not one of the pushes", e)
				}
				if len(vals) > 0 && v <= vals[len(vals)-1] {
					t.Fatalf("queue %q is not in push order", q)
				}
				vals = append(vals, v)
			}
			present := map[int]bool{}
			for _, v := range vals {
				present[v] = true
			}
			if last := acked[len(acked)-1]; vals[len(vals)-1] < last {
				t.Errorf("queue %v ends before the last acknowledged push %d", vals, last)
			}
			for _, v := range acked {
				if v >= vals[0] && !present[v] {
					t.Errorf("acknowledged push %d is missing from the queue %v", v, vals)
				}
			}
		})
	}
}
