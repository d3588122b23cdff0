package shareddata

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestSubscriptionSurvivesRestart: the server a subscriber talks to restarts (same address,
// same data). The subscription must resume by itself and deliver what is published after the
// restart, with nothing delivered twice or skipped.
func TestSubscriptionSurvivesRestart(t *testing.T) {
	for _, backend := range []string{BackendKV, BackendEtcd, BackendRedis} {
		t.Run(backend, func(t *testing.T) {
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
			if err := srv.Restart(ctx); err != nil {
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
