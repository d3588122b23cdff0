package baselines

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/testenv"
)

// need skips the test when a server binary is missing, or fails it under
// CONTINUUM_REQUIRE_ROOT=1 (`make test`, where `make setup` has installed them).
func need(t *testing.T, find func(string) (string, error)) {
	t.Helper()
	if _, err := find(""); err != nil {
		if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// startT starts a server for a test and stops it at cleanup.
func startT(t *testing.T, kind string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, kind, Config{Dir: t.TempDir()}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func TestStartEtcdAndRedis(t *testing.T) {
	for _, c := range []struct {
		kind string
		find func(string) (string, error)
	}{{"etcd", EtcdBinary}, {"redis", RedisBinary}} {
		t.Run(c.kind, func(t *testing.T) {
			need(t, c.find)
			s := startT(t, c.kind)
			if rss, err := s.RSS(); err != nil || rss < 1<<20 {
				t.Errorf("rss %d, %v", rss, err)
			}
			if _, err := s.DiskBytes(); err != nil {
				t.Error(err)
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.Done():
			default:
				t.Fatal("process still running after Stop")
			}
			if err := s.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
		})
	}
}

// TestRedisActiveDefrag: the Redis `make setup` provides can defragment (seeds/000's δ = ON).
// A Redis linked against a jemalloc without Redis's defrag hints (Debian's package) refuses
// `activedefrag yes` at startup.
func TestRedisActiveDefrag(t *testing.T) {
	need(t, RedisBinary)
	s, err := StartRedis(context.Background(), Config{Dir: t.TempDir(), ExtraArgs: []string{"--activedefrag", "yes"}}, "")
	if err != nil {
		t.Fatalf("redis with activedefrag: %v", err)
	}
	_ = s.Stop()
}

func TestRedisStartFailsWithLog(t *testing.T) {
	need(t, RedisBinary)
	_, err := StartRedis(context.Background(), Config{Dir: t.TempDir(), ExtraArgs: []string{"--no-such-option", "1"}}, "")
	if err == nil {
		t.Fatal("redis with a bad option started")
	}
	t.Log(err)
	if _, err := StartRedis(context.Background(), Config{Dir: t.TempDir()}, "sometimes"); err == nil {
		t.Error("appendfsync sometimes accepted")
	}
}

func TestStartKVMissingBinary(t *testing.T) {
	if _, err := StartKV(context.Background(), Config{Dir: t.TempDir(), Bin: "/nonexistent/continuum"}); err == nil {
		t.Error("missing binary accepted")
	}
}

func TestRedisClusterFailsOverWhenAMasterDies(t *testing.T) {
	need(t, RedisBinary)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartRedisCluster(ctx, RedisClusterConfig{Dir: t.TempDir(), NodeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	roles := c.Roles(ctx)
	masters := 0
	for _, r := range roles {
		if r.Master {
			masters++
		} else if !r.LinkUp {
			t.Errorf("replica %s not linked", r.Addr)
		}
	}
	if len(roles) != 6 || masters != 3 {
		t.Fatalf("roles %+v: want 6 instances, 3 masters", roles)
	}
	// Kill a master: its replica must take over its slots, and the cluster be whole again.
	var victim int
	for i, r := range roles {
		if r.Master {
			victim = i
			break
		}
	}
	if err := c.Servers[victim].Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := false
	for _, r := range c.Roles(ctx) {
		if r.Master && r.Addr != roles[victim].Addr {
			for _, old := range roles {
				if old.Addr == r.Addr && !old.Master && old.MasterAddr == roles[victim].Addr {
					promoted = true
				}
			}
		}
	}
	if !promoted {
		t.Errorf("no replica of %s became master: %+v", roles[victim].Addr, c.Roles(ctx))
	}
}

func TestRedisClusterRejectsTooFewMasters(t *testing.T) {
	if _, err := StartRedisCluster(context.Background(), RedisClusterConfig{Dir: t.TempDir(), Masters: 2}); err == nil ||
		!strings.Contains(err.Error(), "at least 3") {
		t.Errorf("2 masters: %v", err)
	}
}

// TestRedisClusterJoiner: six cluster-mode instances, joined by the joiner, which then serves
// their roles; a second joiner on the formed cluster does not create it again.
func TestRedisClusterJoiner(t *testing.T) {
	need(t, RedisBinary)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var addrs []string
	for i := 0; i < 6; i++ {
		s, err := StartRedis(ctx, Config{Dir: t.TempDir(), ExtraArgs: RedisClusterArgs(nil, time.Second)}, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		addrs = append(addrs, s.Target.Endpoints[0])
	}
	for round := 0; round < 2; round++ {
		ports, err := freeport.Ports(1)
		if err != nil {
			t.Fatal(err)
		}
		port := ports[0]
		jctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- RunRedisClusterJoiner(jctx, RedisJoinConfig{Addrs: addrs, Replicas: 1, Listen: "127.0.0.1:" + strconv.Itoa(port)})
		}()
		var roles []Role
		testenv.EventuallyNoError(t, time.Minute, "GET /roles", func() error {
			resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/roles")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			return json.NewDecoder(resp.Body).Decode(&roles)
		})
		masters := 0
		for _, r := range roles {
			if r.Master {
				masters++
			}
		}
		if len(roles) != 6 || masters != 3 {
			t.Errorf("round %d: roles %+v", round, roles)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("round %d: joiner: %v", round, err)
		}
	}
	if err := RunRedisClusterJoiner(ctx, RedisJoinConfig{Addrs: addrs[:4], Replicas: 1}); err == nil || !strings.Contains(err.Error(), "needs at least 6") {
		t.Errorf("4 instances with replicas: %v", err)
	}
}
