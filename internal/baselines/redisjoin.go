package baselines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// RedisJoinConfig is what `continuum redis-cluster create` does: join running cluster-mode
// instances (started by the redis kind with a cluster name) into one Redis Cluster.
type RedisJoinConfig struct {
	// Addrs are the instances (host:port); the first len/(1+Replicas) become masters.
	Addrs    []string
	Replicas int
	// Listen is where the joiner serves, once the cluster is whole, the instances' roles as
	// JSON (GET /roles) until its context ends: its readiness signal for the experiment runner.
	Listen string
	// CLI is redis-cli (default: looked up as RedisCLI does).
	CLI string
	// Timeout bounds waiting for the instances and for the cluster (default 60 s).
	Timeout time.Duration
}

// RunRedisClusterJoiner waits for every instance, creates the cluster unless the instances
// already form one (a restarted joiner), waits until it is whole, then serves Listen until
// ctx ends.
func RunRedisClusterJoiner(ctx context.Context, cfg RedisJoinConfig) error {
	if n := len(cfg.Addrs); n < 3*(1+cfg.Replicas) {
		return fmt.Errorf("redis cluster of %d instances with %d replicas per master: needs at least %d (3 masters)", n, cfg.Replicas, 3*(1+cfg.Replicas))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultReadyTimeout
	}
	cli := cfg.CLI
	if cli == "" {
		var err error
		if cli, err = RedisCLI(""); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	for _, addr := range cfg.Addrs {
		if err := waitPing(wctx, addr); err != nil {
			return err
		}
	}
	formed, err := alreadyFormed(wctx, cfg.Addrs)
	if err != nil {
		return err
	}
	if !formed {
		if err := CreateRedisCluster(wctx, cli, cfg.Addrs, cfg.Replicas); err != nil {
			return err
		}
	}
	if err := WaitRedisClusterHealthy(wctx, func() []string { return cfg.Addrs }); err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /roles", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, RedisRoles(r.Context(), cfg.Addrs))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func waitPing(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis %s not answering: %v", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// alreadyFormed reports whether the first instance already knows all the others.
func alreadyFormed(ctx context.Context, addrs []string) (bool, error) {
	info, err := infoSection(ctx, addrs[0], "cluster-info")
	if err != nil {
		return false, err
	}
	return info["cluster_known_nodes"] == fmt.Sprint(len(addrs)) && info["cluster_state"] == "ok", nil
}
