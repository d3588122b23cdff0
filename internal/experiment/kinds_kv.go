package experiment

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/kvtarget"
	"github.com/continuum-project/continuum/internal/kvtarget/baseline"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
	"github.com/continuum-project/continuum/internal/spec"
)

// The key-value kinds: components "etcd" (a real etcd 3.6 member), "redis" (redis-server with
// AOF) and "kv" (`continuum kv`), and the workload "ycsb" (`continuum load ycsb`, package
// loadgen/ycsb) against a URL or one of those components. Each component keeps its data in
// data_dir (default <instance results dir>/data), which the samplers report as disk usage.
func init() {
	Register(&Kind{
		Name:      "etcd",
		Role:      RoleComponent,
		Summary:   "etcd 3.6 member (.tools/bin/etcd or $CONTINUUM_ETCD_BIN), etcd's default fsync; members with the same `cluster` form one cluster",
		NewConfig: func() any { return &EtcdConfig{ClientPort: 2379, PeerPort: 2380} },
		Validate:  func(cfg any) error { return cfg.(*EtcdConfig).validate() },
		Command:   etcdCommand,
	})
	Register(&Kind{
		Name:      "redis",
		Role:      RoleComponent,
		Summary:   "Redis 7 (redis-server) with AOF on, appendfsync everysec (or always)",
		NewConfig: func() any { return &RedisConfig{Port: 6379, AppendFsync: baseline.RedisFsyncEverySec} },
		Validate:  func(cfg any) error { return cfg.(*RedisConfig).validate() },
		Command:   redisCommand,
	})
	Register(&Kind{
		Name:      "kv",
		Role:      RoleComponent,
		Summary:   "continuum kv: the etcd-v3-compatible store (`continuum kv`); members with the same `cluster` replicate",
		NewConfig: func() any { return &KVConfig{ClientPort: 2379, PeerPort: 2380} },
		Validate:  func(cfg any) error { return cfg.(*KVConfig).validate() },
		Command:   kvCommand,
		Metrics:   kvMetrics,
	})
	Register(&Kind{
		Name:    "ycsb",
		Role:    RoleWorkload,
		Summary: "YCSB core workload A-F (load then run phase) against etcd, kv or redis; one series per operation type",
		NewConfig: func() any {
			return &YCSBConfig{Workload: "a", RecordCount: 1000, Phase: ycsb.PhaseBoth, Timeout: spec.Duration{Duration: time.Second}}
		},
		Validate: func(cfg any) error { return cfg.(*YCSBConfig).validate() },
		Command:  ycsbCommand,
	})
}

// EtcdConfig is the `config:` of an etcd component.
type EtcdConfig struct {
	ClientPort int    `yaml:"client_port"` // default 2379
	PeerPort   int    `yaml:"peer_port"`   // default 2380 (a single member listens on loopback only)
	DataDir    string `yaml:"data_dir"`    // default <instance results dir>/data
	Bin        string `yaml:"bin"`         // default $CONTINUUM_ETCD_BIN, .tools/bin/etcd, PATH
	// Cluster names the cluster this member belongs to: every etcd component with the same
	// cluster is in its --initial-cluster (at its node's address and peer_port). Empty: alone.
	Cluster string `yaml:"cluster"`
	// QuotaBackendBytes is etcd's --quota-backend-bytes (0: etcd's default 2 GiB).
	QuotaBackendBytes spec.Bytes `yaml:"quota_backend_bytes"`
}

// RedisConfig is the `config:` of a redis component.
type RedisConfig struct {
	Port int `yaml:"port"` // default 6379
	// AppendFsync is everysec (default; acknowledges before the fsync) or always.
	AppendFsync string `yaml:"appendfsync"`
	DataDir     string `yaml:"data_dir"`
	Bin         string `yaml:"bin"` // default $CONTINUUM_REDIS_BIN, redis-server in PATH
}

// KVConfig is the `config:` of a kv component.
type KVConfig struct {
	ClientPort int    `yaml:"client_port"` // default 2379
	DataDir    string `yaml:"data_dir"`
	// Fsync is `continuum kv --fsync`: batch (its default), always or never; empty: the default.
	Fsync string `yaml:"fsync"`
	// PeerPort is the replication port of a cluster member (default 2380).
	PeerPort int `yaml:"peer_port"`
	// Cluster names the cluster this member belongs to: every kv component with the same
	// cluster is in its --initial-cluster. Empty: a single member.
	Cluster string `yaml:"cluster"`
	// Peers names the members this one pulls changes from (default: all others), for partial
	// meshes; they must be in the same cluster.
	Peers []string `yaml:"peers"`
	// PeerBatchLinger is `continuum kv --peer-batch-linger` (absent: its default; 0: every
	// change sent at once), for sweeping the batching of replication.
	PeerBatchLinger *spec.Duration `yaml:"peer_batch_linger"`
}

func checkPort(name string, p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("%s %d: must be between 1 and 65535", name, p)
	}
	return nil
}

func checkDataDir(d string) error {
	if d != "" && !filepath.IsAbs(d) {
		return fmt.Errorf("data_dir %q: must be an absolute path (default: the instance's results dir)", d)
	}
	return nil
}

func (c *EtcdConfig) validate() error {
	switch {
	case checkPort("client_port", c.ClientPort) != nil:
		return checkPort("client_port", c.ClientPort)
	case checkPort("peer_port", c.PeerPort) != nil:
		return checkPort("peer_port", c.PeerPort)
	case c.ClientPort == c.PeerPort:
		return fmt.Errorf("client_port and peer_port are both %d", c.ClientPort)
	case c.QuotaBackendBytes < 0:
		return fmt.Errorf("quota_backend_bytes %d: must be >= 0", c.QuotaBackendBytes)
	}
	return checkDataDir(c.DataDir)
}

func (c *RedisConfig) validate() error {
	if err := checkPort("port", c.Port); err != nil {
		return err
	}
	if c.AppendFsync != baseline.RedisFsyncEverySec && c.AppendFsync != baseline.RedisFsyncAlways {
		return fmt.Errorf("appendfsync %q: want everysec or always", c.AppendFsync)
	}
	return checkDataDir(c.DataDir)
}

func (c *KVConfig) validate() error {
	if err := checkPort("client_port", c.ClientPort); err != nil {
		return err
	}
	if err := checkPort("peer_port", c.PeerPort); err != nil {
		return err
	}
	if c.PeerPort == c.ClientPort {
		return fmt.Errorf("client_port and peer_port are both %d", c.ClientPort)
	}
	if len(c.Peers) > 0 && c.Cluster == "" {
		return errors.New("peers needs cluster: only members of one cluster pull from each other")
	}
	if l := c.PeerBatchLinger; l != nil {
		if c.Cluster == "" {
			return errors.New("peer_batch_linger needs cluster: a single member sends no changes")
		}
		if l.Duration < 0 || l.Duration >= time.Second {
			return fmt.Errorf("peer_batch_linger %v: want 0 (no linger) up to below 1s (the heartbeat)", l.Duration)
		}
	}
	switch c.Fsync {
	case "", "batch", "always", "never":
	default:
		return fmt.Errorf("fsync %q: want batch, always or never", c.Fsync)
	}
	return checkDataDir(c.DataDir)
}

// ServicePort is the client port (for workloads that target the component by name).
func (c *EtcdConfig) ServicePort() int  { return c.ClientPort }
func (c *RedisConfig) ServicePort() int { return c.Port }
func (c *KVConfig) ServicePort() int    { return c.ClientPort }

func dataDir(env Env, configured string) string {
	if configured != "" {
		return configured
	}
	return filepath.Join(env.OutDir, "data")
}

// advertised is the client URL other nodes use: the node's address, else its name.
func advertised(env Env, port int) string {
	host := env.Node
	if a, ok := env.Nodes[env.Node]; ok && a != "" {
		host = a
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

func etcdCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*EtcdConfig)
	bin, err := baseline.EtcdBinary(c.Bin)
	if err != nil {
		return Command{}, fmt.Errorf("etcd %s: %w", env.Instance, err)
	}
	dir := dataDir(env, c.DataDir)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.PeerPort)
	listenPeer, cluster := peer, env.Instance+"="+peer
	if c.Cluster != "" {
		members := clusterMembers(env, c.Cluster, func(cfg any) (int, bool) {
			if ec, ok := cfg.(*EtcdConfig); ok && ec.Cluster == c.Cluster {
				return ec.PeerPort, true
			}
			return 0, false
		})
		peer, listenPeer, cluster = advertised(env, c.PeerPort), "http://0.0.0.0:"+strconv.Itoa(c.PeerPort), initialCluster(members)
	}
	args := []string{bin, "--name", env.Instance, "--data-dir", dir,
		"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(c.ClientPort),
		"--advertise-client-urls", advertised(env, c.ClientPort),
		"--listen-peer-urls", listenPeer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", cluster, "--log-level", "warn"}
	if c.Cluster != "" {
		args = append(args, "--initial-cluster-token", c.Cluster, "--initial-cluster-state", "new")
	}
	if c.QuotaBackendBytes > 0 {
		args = append(args, "--quota-backend-bytes", strconv.FormatInt(int64(c.QuotaBackendBytes), 10))
	}
	return Command{Args: args, DataDirs: []string{dir}, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.ClientPort)}, nil
}

func redisCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*RedisConfig)
	bin, err := baseline.RedisBinary(c.Bin)
	if err != nil {
		return Command{}, fmt.Errorf("redis %s: %w", env.Instance, err)
	}
	dir := dataDir(env, c.DataDir)
	args := baseline.RedisArgs(bin, dir, c.Port, c.AppendFsync)
	// Inside a node: every interface, not loopback only (protected mode is off in RedisArgs).
	for i := range args {
		if args[i] == "--bind" {
			args[i+1] = "0.0.0.0"
		}
	}
	// redis-server does not create its --dir: a shell creates it and execs the server, so
	// the process the testbed watches is redis-server itself.
	args = append([]string{"/bin/sh", "-c", `mkdir -p "$0" && exec "$@"`, dir}, args...)
	return Command{Args: args, DataDirs: []string{dir}, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port)}, nil
}

func kvCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*KVConfig)
	dir := dataDir(env, c.DataDir)
	args := []string{env.Binary, "kv", "--name", env.Instance, "--data-dir", dir,
		"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(c.ClientPort),
		"--advertise-client-urls", advertised(env, c.ClientPort)}
	if c.Fsync != "" {
		args = append(args, "--fsync", c.Fsync)
	}
	if c.Cluster != "" {
		members := clusterMembers(env, c.Cluster, func(cfg any) (int, bool) {
			if kc, ok := cfg.(*KVConfig); ok && kc.Cluster == c.Cluster {
				return kc.PeerPort, true
			}
			return 0, false
		})
		for _, p := range c.Peers {
			if _, ok := members[p]; !ok || p == env.Instance {
				return Command{}, fmt.Errorf("kv %s: peers names %q, which is not another member of cluster %q", env.Instance, p, c.Cluster)
			}
		}
		args = append(args, "--listen-peer-urls", "http://0.0.0.0:"+strconv.Itoa(c.PeerPort),
			"--initial-advertise-peer-urls", advertised(env, c.PeerPort),
			"--initial-cluster", initialCluster(members), "--initial-cluster-token", c.Cluster)
		if len(c.Peers) > 0 {
			args = append(args, "--peers", strings.Join(c.Peers, ","))
		}
		if c.PeerBatchLinger != nil {
			args = append(args, "--peer-batch-linger", c.PeerBatchLinger.String())
		}
	}
	return Command{Args: args, DataDirs: []string{dir}, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.ClientPort)}, nil
}

// clusterMembers maps each component instance that is a member of cluster (as member reports
// for its config, with its peer port) to its peer URL at its node's address.
func clusterMembers(env Env, cluster string, member func(cfg any) (peerPort int, ok bool)) map[string]string {
	out := map[string]string{}
	for inst, cfg := range env.ComponentConfigs {
		port, ok := member(cfg)
		if !ok {
			continue
		}
		node := env.Components[inst]
		host := node
		if a := env.Nodes[node]; a != "" {
			host = a
		}
		out[inst] = "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	return out
}

// initialCluster renders members as etcd's --initial-cluster, in name order.
func initialCluster(members map[string]string) string {
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + members[n]
	}
	return strings.Join(parts, ",")
}

// YCSBConfig is the `config:` of a ycsb workload: one target (a URL or a component) and the
// workload. The load phase runs first, before the run phase's duration starts; keep it short
// (recordcount of a few thousand) since the runner allows 30 s beyond the scenario's duration.
type YCSBConfig struct {
	// Target is etcd=http://HOST:PORT, kv=http://HOST:PORT or redis=HOST:PORT; or Component
	// names an etcd, kv or redis instance (reached at its node on its port, or Port).
	Target    string `yaml:"target,omitempty"`
	Component string `yaml:"component,omitempty"`
	Port      int    `yaml:"port,omitempty"`

	Workload            string        `yaml:"workload"`    // a..f (default a)
	RecordCount         int64         `yaml:"recordcount"` // default 1000
	OperationCount      int64         `yaml:"operationcount"`
	FieldCount          int           `yaml:"fieldcount"`          // 0: the preset's (10)
	FieldLength         int           `yaml:"fieldlength"`         // 0: the preset's (100)
	RequestDistribution string        `yaml:"requestdistribution"` // empty: the preset's
	Phase               string        `yaml:"phase"`               // load, run or both (default)
	Rate                float64       `yaml:"rate"`                // open loop: operations/s
	Clients             int           `yaml:"clients"`             // closed loop
	Timeout             spec.Duration `yaml:"timeout"`             // default 1s
	MaxInflight         int           `yaml:"max_inflight"`
	LoadClients         int           `yaml:"load_clients"` // default 32
	Conns               int           `yaml:"conns"`        // client connections (default per store)
}

func (c *YCSBConfig) validate() error {
	switch {
	case (c.Target == "") == (c.Component == ""):
		return errors.New("give exactly one of target (etcd=http://HOST:PORT, kv=..., redis=HOST:PORT) and component")
	case c.Target != "" && c.Port != 0:
		return errors.New("port goes with component, not target")
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("port %d: must be between 1 and 65535", c.Port)
	case c.Rate < 0 || c.Clients < 0:
		return errors.New("rate and clients must be >= 0")
	case (c.Rate > 0) == (c.Clients > 0):
		return errors.New("exactly one of rate (open loop, operations/s) and clients (closed loop) must be > 0")
	case c.Timeout.Duration <= 0 || c.Timeout.Duration > time.Minute:
		return fmt.Errorf("timeout %v: must be > 0 and <= 1m", c.Timeout)
	case c.MaxInflight < 0 || c.LoadClients < 0 || c.Conns < 0:
		return errors.New("max_inflight, load_clients and conns must be >= 0")
	}
	if c.Target != "" {
		if _, err := kvtarget.ParseTarget(c.Target); err != nil {
			return err
		}
	}
	w, err := ycsb.Preset(c.Workload)
	if err != nil {
		return err
	}
	w.RecordCount, w.OperationCount = c.RecordCount, c.OperationCount
	if c.FieldCount != 0 {
		w.FieldCount = c.FieldCount
	}
	if c.FieldLength != 0 {
		w.FieldLength = c.FieldLength
	}
	if c.RequestDistribution != "" {
		w.RequestDistribution = c.RequestDistribution
	}
	if err := w.Validate(); err != nil {
		return err
	}
	switch c.Phase {
	case ycsb.PhaseLoad, ycsb.PhaseRun, ycsb.PhaseBoth:
	default:
		return fmt.Errorf("phase %q: want load, run or both", c.Phase)
	}
	return nil
}

// target resolves the workload's target; a component becomes <kind>=<its node>:<port>.
func (c *YCSBConfig) target(env Env) (string, error) {
	if c.Target != "" {
		return c.Target, nil
	}
	node, err := env.ComponentNode(c.Component)
	if err != nil {
		return "", err
	}
	cc := env.ComponentConfigs[c.Component]
	port := c.Port
	if sp, ok := cc.(servicePort); ok && port == 0 {
		port = sp.ServicePort()
	}
	hostPort := net.JoinHostPort(node, strconv.Itoa(port))
	switch cc.(type) {
	case *EtcdConfig:
		return kvtarget.KindEtcd + "=http://" + hostPort, nil
	case *KVConfig:
		return kvtarget.KindKV + "=http://" + hostPort, nil
	case *RedisConfig:
		return kvtarget.KindRedis + "=" + hostPort, nil
	}
	return "", fmt.Errorf("component %q: not an etcd, kv or redis component", c.Component)
}

func ycsbCommand(env Env, cfg any) (Command, error) {
	c := cfg.(*YCSBConfig)
	target, err := c.target(env)
	if err != nil {
		return Command{}, err
	}
	args := []string{env.Binary, "load", "ycsb", "--target", target, "--workload", c.Workload,
		"--phase", c.Phase, "--recordcount", strconv.FormatInt(c.RecordCount, 10)}
	if c.OperationCount > 0 {
		args = append(args, "--operationcount", strconv.FormatInt(c.OperationCount, 10))
	}
	if c.FieldCount > 0 {
		args = append(args, "--fieldcount", strconv.Itoa(c.FieldCount))
	}
	if c.FieldLength > 0 {
		args = append(args, "--fieldlength", strconv.Itoa(c.FieldLength))
	}
	if c.RequestDistribution != "" {
		args = append(args, "--requestdistribution", c.RequestDistribution)
	}
	if c.Clients > 0 {
		args = append(args, "--clients", strconv.Itoa(c.Clients))
	} else {
		args = append(args, "--rate", strconv.FormatFloat(c.Rate, 'f', -1, 64))
	}
	args = append(args, "--timeout", c.Timeout.String())
	if c.MaxInflight > 0 {
		args = append(args, "--max-inflight", strconv.Itoa(c.MaxInflight))
	}
	if c.LoadClients > 0 {
		args = append(args, "--load-clients", strconv.Itoa(c.LoadClients))
	}
	if c.Conns > 0 {
		args = append(args, "--conns", strconv.Itoa(c.Conns))
	}
	args = append(args, "--duration", env.Duration.String(), "--warmup", env.Warmup.String(),
		"--out", env.OutDir, "--seed", strconv.FormatInt(env.Seed, 10))
	return Command{Args: args}, nil
}
