package baselines

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

// RedisClusterConfig shapes a Redis Cluster on loopback ports.
type RedisClusterConfig struct {
	// Dir receives one directory per instance (Dir/node<i>/data, Dir/node<i>/server.log).
	Dir string
	// Masters is the number of shards (default 3; Redis Cluster needs at least 3).
	Masters int
	// ReplicasPerMaster is the number of replicas of each master: 0 means the default 1,
	// NoReplicas means none.
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how long a master may be unreachable before its
	// replica is promoted (default Redis's 15 s).
	NodeTimeout time.Duration
	// AppendFsync is each instance's appendfsync (default everysec).
	AppendFsync string
	// Bin is redis-server (default: RedisBinary("")); redis-cli is looked up next to it, then in PATH.
	Bin string
	// ReadyTimeout bounds each instance's start and the wait for the cluster to be whole.
	ReadyTimeout time.Duration
}

// NoReplicas as ReplicasPerMaster makes a cluster of masters only.
const NoReplicas = -1

// DefaultRedisNodeTimeout is Redis's default cluster-node-timeout.
const DefaultRedisNodeTimeout = 15 * time.Second

// RedisCluster is a started Redis Cluster: Servers[i] listens on Addrs[i]. The first Masters
// instances were created as masters; roles change after a failover (see Roles).
type RedisCluster struct {
	Servers []*Server
	Addrs   []string
}

// RedisClusterArgs adds the cluster options to a Redis instance's command line (nodeTimeout 0:
// Redis's default).
func RedisClusterArgs(args []string, nodeTimeout time.Duration) []string {
	if nodeTimeout <= 0 {
		nodeTimeout = DefaultRedisNodeTimeout
	}
	return append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10))
}

// StartRedisCluster starts Masters x (1 + ReplicasPerMaster) redis-server instances in cluster
// mode, joins them with `redis-cli --cluster create`, and returns once every slot is served
// and every replica's link to its master is up (so killing a master can fail over).
func StartRedisCluster(ctx context.Context, cfg RedisClusterConfig) (*RedisCluster, error) {
	if cfg.Masters == 0 {
		cfg.Masters = 3
	}
	if cfg.Masters < 3 {
		return nil, fmt.Errorf("redis cluster with %d masters: Redis Cluster needs at least 3", cfg.Masters)
	}
	switch {
	case cfg.ReplicasPerMaster == 0:
		cfg.ReplicasPerMaster = 1
	case cfg.ReplicasPerMaster == NoReplicas:
		cfg.ReplicasPerMaster = 0
	case cfg.ReplicasPerMaster < 0:
		return nil, fmt.Errorf("redis cluster replicas per master %d: want >= 1, or NoReplicas", cfg.ReplicasPerMaster)
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = DefaultRedisNodeTimeout
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	bin, err := RedisBinary(cfg.Bin)
	if err != nil {
		return nil, err
	}
	cli, err := redisCLI(bin)
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	n := cfg.Masters * (1 + cfg.ReplicasPerMaster)
	for i := 0; i < n; i++ {
		s, err := StartRedis(ctx, Config{
			Dir: filepath.Join(cfg.Dir, "node"+strconv.Itoa(i)), Bin: bin, ReadyTimeout: cfg.ReadyTimeout,
			ExtraArgs: RedisClusterArgs(nil, cfg.NodeTimeout),
		}, cfg.AppendFsync)
		if err != nil {
			return nil, fmt.Errorf("redis cluster instance %d: %w", i, err)
		}
		c.Servers = append(c.Servers, s)
		c.Addrs = append(c.Addrs, s.Target.Endpoints[0])
	}
	if err := CreateRedisCluster(ctx, cli, c.Addrs, cfg.ReplicasPerMaster); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// CreateRedisCluster joins running cluster-mode instances into one cluster with
// `redis-cli --cluster create`: the first len(addrs)/(1+replicas) become masters and share the
// slots, the others their replicas (redis-cli puts a replica on another host than its master
// where it can).
func CreateRedisCluster(ctx context.Context, cli string, addrs []string, replicas int) error {
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	return nil
}

// RedisCLI finds redis-cli: next to redis-server (RedisBinary(server)), then in PATH.
func RedisCLI(server string) (string, error) {
	bin, err := RedisBinary(server)
	if err != nil {
		return "", err
	}
	return redisCLI(bin)
}

// redisCLI finds redis-cli next to redis-server, then in PATH.
func redisCLI(server string) (string, error) {
	if p, err := exec.LookPath(filepath.Join(filepath.Dir(server), "redis-cli")); err == nil {
		return p, nil
	}
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", fmt.Errorf("redis-cli not found next to %s or in PATH: run `continuum setup baselines`", server)
	}
	return p, nil
}

// Target is how clients reach the cluster (kvtarget kind redis-cluster, every instance a seed).
func (c *RedisCluster) Target() kvtarget.Target {
	return kvtarget.Target{Kind: "redis-cluster", Endpoints: append([]string(nil), c.Addrs...)}
}

// Stop stops every instance.
func (c *RedisCluster) Stop() {
	for _, s := range c.Servers {
		_ = s.Stop()
	}
}

// Role is an instance's place in the cluster as it reports it.
type Role struct {
	Addr string
	// Master is true for a master; a replica has MasterAddr and LinkUp (master_link_status).
	Master     bool
	MasterAddr string
	LinkUp     bool
}

// Roles asks every running instance for its role (INFO replication). An instance that does not
// answer is left out.
func (c *RedisCluster) Roles(ctx context.Context) []Role { return RedisRoles(ctx, c.running()) }

// running is the addresses of the instances whose process runs.
func (c *RedisCluster) running() []string {
	var addrs []string
	for i, addr := range c.Addrs {
		select {
		case <-c.Servers[i].Done():
		default:
			addrs = append(addrs, addr)
		}
	}
	return addrs
}

// WaitHealthy waits until every running instance reports cluster_state:ok and every replica's
// link to its master is up.
func (c *RedisCluster) WaitHealthy(ctx context.Context) error {
	return WaitRedisClusterHealthy(ctx, c.running)
}

// RedisRoles asks each instance for its role (INFO replication); one that does not answer is
// left out.
func RedisRoles(ctx context.Context, addrs []string) []Role {
	var roles []Role
	for _, addr := range addrs {
		info, err := infoSection(ctx, addr, "replication")
		if err != nil {
			continue
		}
		r := Role{Addr: addr, Master: info["role"] == "master"}
		if !r.Master {
			r.MasterAddr = info["master_host"] + ":" + info["master_port"]
			r.LinkUp = info["master_link_status"] == "up"
		}
		roles = append(roles, r)
	}
	return roles
}

// WaitRedisClusterHealthy waits until every instance addrs() lists reports cluster_state:ok
// and every replica's link to its master is up.
func WaitRedisClusterHealthy(ctx context.Context, addrs func() []string) error {
	var last error
	for {
		if last = redisClusterHealthy(ctx, addrs()); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis cluster not healthy: %w (%v)", last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func redisClusterHealthy(ctx context.Context, addrs []string) error {
	for _, addr := range addrs {
		info, err := infoSection(ctx, addr, "cluster-info")
		if err != nil {
			return err
		}
		if info["cluster_state"] != "ok" {
			return fmt.Errorf("%s: cluster_state %q", addr, info["cluster_state"])
		}
	}
	for _, r := range RedisRoles(ctx, addrs) {
		if !r.Master && !r.LinkUp {
			return fmt.Errorf("replica %s: link to master %s is down", r.Addr, r.MasterAddr)
		}
	}
	return nil
}

// infoSection runs INFO <section> (or CLUSTER INFO for "cluster-info") on one instance and
// returns its field: value lines.
func infoSection(ctx context.Context, addr, section string) (map[string]string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	var text string
	var err error
	if section == "cluster-info" {
		text, err = rdb.ClusterInfo(ctx).Result()
	} else {
		text, err = rdb.Info(ctx, section).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil, errors.New(addr + ": empty INFO " + section)
	}
	return m, nil
}
