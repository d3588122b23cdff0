package kinds

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
)

// Each component keeps its data in data_dir (default <instance results dir>/data), which the
// samplers report as disk usage.
func init() {
	kind.Register(kind.Def[EtcdConfig]{
		Name:     "etcd",
		System:   "baselines",
		Doc:      "docs/scenarios.md#instances-components-workloads",
		Stacks:   []string{"baselines"},
		Role:     kind.RoleComponent,
		Summary:  "etcd 3.6 member (.tools/bin/etcd or $CONTINUUM_ETCD_BIN), etcd's default fsync; members with the same `cluster` form one cluster",
		Defaults: func() *EtcdConfig { return &EtcdConfig{ClientPort: 2379, PeerPort: 2380} },
		Validate: (*EtcdConfig).validate,
		Command:  etcdCommand,
		Endpoints: func(c *EtcdConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolEtcdV3, Port: c.ClientPort},
				{Name: "peer", Protocol: "etcd-raft", Port: c.PeerPort}}
		},
	})
	kind.Register(kind.Def[RedisConfig]{
		Name:     "redis",
		System:   "baselines",
		Doc:      "docs/scenarios.md#instances-components-workloads",
		Stacks:   []string{"baselines"},
		Role:     kind.RoleComponent,
		Summary:  "Redis 7 (redis-server) with AOF on, appendfsync everysec (or always); with `cluster`, an instance of a Redis Cluster (joined by a redis-cluster component)",
		Defaults: func() *RedisConfig { return &RedisConfig{Port: 6379, AppendFsync: baselines.RedisFsyncEverySec} },
		Validate: (*RedisConfig).validate,
		Command:  redisCommand,
		Endpoints: func(c *RedisConfig) []kind.Endpoint {
			if c.Cluster != "" {
				return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolRedisCluster, Port: c.Port}}
			}
			return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolRedis, Port: c.Port}}
		},
	})
	kind.Register(kind.Def[MosquittoConfig]{
		Name:     "mosquitto",
		System:   "baselines",
		Doc:      "docs/scenarios.md#instances-components-workloads",
		Stacks:   []string{"baselines"},
		Role:     kind.RoleComponent,
		Summary:  "MQTT broker (Debian's mosquitto 2.0), anonymous, no persistence: the broker IoT devices publish to (iot workload's broker)",
		Defaults: func() *MosquittoConfig { return &MosquittoConfig{Port: 1883} },
		Validate: (*MosquittoConfig).validate,
		Command:  mosquittoCommand,
		Endpoints: func(c *MosquittoConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolMQTT, Port: c.Port}}
		},
	})
}

// MosquittoConfig is the `config:` of a mosquitto component.
type MosquittoConfig struct {
	Port int    `yaml:"port"` // default 1883
	Bin  string `yaml:"bin"`  // default $CONTINUUM_MOSQUITTO_BIN, PATH, /usr/sbin/mosquitto
	// MaxQueuedMessages is how many QoS 1 messages the broker holds per subscriber that lags
	// (default 100000; mosquitto's own default is 1000).
	MaxQueuedMessages int `yaml:"max_queued_messages"`
}

func (c *MosquittoConfig) validate() error {
	var errs kind.FieldErrors
	if c.MaxQueuedMessages < 0 {
		errs.Add("max_queued_messages", "max_queued_messages (mosquitto.conf)", "%d: must be >= 0", c.MaxQueuedMessages)
	}
	errs.CheckPort("port", "listener (mosquitto.conf)", c.Port)
	return errs.Err()
}

func mosquittoCommand(env kind.Env, c *MosquittoConfig) (kind.Command, error) {
	bin, err := baselines.MosquittoBinary(c.Bin)
	if err != nil {
		return kind.Command{}, fmt.Errorf("mosquitto %s: %w", env.Instance, err)
	}
	// mosquitto reads its listeners from a file only: a shell writes it into the instance's
	// directory, lifts the open-files limit to its hard limit (a connection per device; only
	// that far, as the node's processes may not raise the hard one), and execs the broker, so
	// the process the testbed watches is mosquitto itself.
	conf := filepath.Join(env.OutDir, "mosquitto.conf")
	return kind.Command{
		Args: []string{"/bin/sh", "-c", `printf '%s' "$MOSQUITTO_CONF" > "$0" && ulimit -n "$(ulimit -Hn)" && exec "$1" -c "$0"`, conf, bin},
		Env:  []string{"MOSQUITTO_CONF=" + baselines.MosquittoConf("0.0.0.0", c.Port, c.MaxQueuedMessages)},
		// Ready once it listens.
		ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port),
	}, nil
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
	// Cluster runs the instance in cluster mode, as a member of the named Redis Cluster (a
	// redis-cluster component joins the members). Empty: standalone.
	Cluster string `yaml:"cluster,omitempty"`
	// ClusterNodeTimeout is cluster-node-timeout: how long a master may be unreachable before
	// a replica takes over (default Redis's 15s).
	ClusterNodeTimeout spec.Duration `yaml:"cluster_node_timeout,omitempty"`
	// ActiveDefrag turns on Redis's active defragmentation (the seed's δ = ON).
	ActiveDefrag bool `yaml:"activedefrag,omitempty"`
}

// validate reports every problem at once, each with its key and the etcd flag it becomes.
func (c *EtcdConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("client_port", "--listen-client-urls", c.ClientPort)
	errs.CheckPort("peer_port", "--listen-peer-urls", c.PeerPort)
	if c.ClientPort == c.PeerPort {
		errs.Add("peer_port", "--listen-peer-urls", "client_port and peer_port are both %d", c.ClientPort)
	}
	if c.QuotaBackendBytes < 0 {
		errs.Add("quota_backend_bytes", "--quota-backend-bytes", "%d: must be >= 0", c.QuotaBackendBytes)
	}
	errs.CheckDataDir("--data-dir", c.DataDir)
	return errs.Err()
}

// validate reports every problem at once, each with its key and the redis-server option it
// becomes.
func (c *RedisConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "--port", c.Port)
	if c.AppendFsync != baselines.RedisFsyncEverySec && c.AppendFsync != baselines.RedisFsyncAlways {
		errs.Add("appendfsync", "--appendfsync", "%q: want everysec or always", c.AppendFsync)
	}
	if c.ClusterNodeTimeout.Duration < 0 || c.ClusterNodeTimeout.Duration > 0 && c.Cluster == "" {
		errs.Add("cluster_node_timeout", "--cluster-node-timeout", "%v: goes with cluster, and must be > 0", c.ClusterNodeTimeout)
	}
	if c.Port > 65535-10000 && c.Port <= 65535 && c.Cluster != "" {
		errs.Add("port", "--port", "%d: a cluster member also listens on port+10000 (its cluster bus), so at most %d", c.Port, 65535-10000)
	}
	errs.CheckDataDir("--dir", c.DataDir)
	return errs.Err()
}

func etcdCommand(env kind.Env, c *EtcdConfig) (kind.Command, error) {
	bin, err := baselines.EtcdBinary(c.Bin)
	if err != nil {
		return kind.Command{}, fmt.Errorf("etcd %s: %w", env.Instance, err)
	}
	dir := kind.DataDir(env, c.DataDir)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.PeerPort)
	listenPeer, cluster := peer, env.Instance+"="+peer
	if c.Cluster != "" {
		members := env.MemberURLs(func(_ string, m kind.Component) (int, bool) {
			if ec, ok := m.Config.(*EtcdConfig); ok && ec.Cluster == c.Cluster {
				return ec.PeerPort, true
			}
			return 0, false
		})
		peer, listenPeer, cluster = env.AdvertisedURL(c.PeerPort), "http://0.0.0.0:"+strconv.Itoa(c.PeerPort), kind.InitialCluster(members)
	}
	args := []string{bin, "--name", env.Instance, "--data-dir", dir,
		"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(c.ClientPort),
		"--advertise-client-urls", env.AdvertisedURL(c.ClientPort),
		"--listen-peer-urls", listenPeer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", cluster, "--log-level", "warn"}
	if c.Cluster != "" {
		args = append(args, "--initial-cluster-token", c.Cluster, "--initial-cluster-state", "new")
	}
	if c.QuotaBackendBytes > 0 {
		args = append(args, "--quota-backend-bytes", strconv.FormatInt(int64(c.QuotaBackendBytes), 10))
	}
	return kind.Command{Args: args, DataDirs: []string{dir}, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.ClientPort)}, nil
}

func redisCommand(env kind.Env, c *RedisConfig) (kind.Command, error) {
	bin, err := baselines.RedisBinary(c.Bin)
	if err != nil {
		return kind.Command{}, fmt.Errorf("redis %s: %w", env.Instance, err)
	}
	dir := kind.DataDir(env, c.DataDir)
	args := baselines.RedisArgs(bin, dir, c.Port, c.AppendFsync)
	if c.Cluster != "" {
		args = baselines.RedisClusterArgs(args, c.ClusterNodeTimeout.Duration)
	}
	if c.ActiveDefrag {
		args = append(args, "--activedefrag", "yes")
	}
	// Inside a node: every interface, not loopback only (protected mode is off in RedisArgs).
	for i := range args {
		if args[i] == "--bind" {
			args[i+1] = "0.0.0.0"
		}
	}
	// redis-server does not create its --dir: a shell creates it and execs the server, so
	// the process the testbed watches is redis-server itself.
	args = append([]string{"/bin/sh", "-c", `mkdir -p "$0" && exec "$@"`, dir}, args...)
	return kind.Command{Args: args, DataDirs: []string{dir}, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port)}, nil
}
