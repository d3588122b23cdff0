package kinds

import (
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/continuum-project/continuum/internal/baselines/baselinescmd"
	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
)

func init() {
	kind.Register(kind.Def[RedisClusterConfig]{
		Name:    "redis-cluster",
		System:  "baselines",
		Doc:     "docs/scenarios.md#instances-components-workloads",
		Stacks:  []string{"baselines"},
		Role:    kind.RoleComponent,
		Helper:  true,
		Summary: "joins redis components of one `cluster` into a Redis Cluster (redis-cli --cluster create); ready once every slot is served and every replica linked",
		Defaults: func() *RedisClusterConfig {
			return &RedisClusterConfig{ReplicasPerMaster: 1, Port: 16999}
		},
		Validate: (*RedisClusterConfig).validate,
		Command:  redisClusterCommand,
		Endpoints: func(c *RedisClusterConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "roles", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
	})
}

// RedisClusterConfig is the `config:` of a redis-cluster component. List it after its members:
// components start in order, and workloads start once it is ready.
type RedisClusterConfig struct {
	// Cluster is the members' `cluster` name. Members are given to redis-cli in name order,
	// so with one replica per master the first half by name become masters (name them so:
	// r1..r3 masters on three nodes, r4..r6 their replicas; redis-cli puts a replica on
	// another node than its master).
	Cluster           string `yaml:"cluster"`
	ReplicasPerMaster int    `yaml:"replicas_per_master"` // default 1
	// Port serves GET /roles (every member's role) once the cluster is whole.
	Port int `yaml:"port"` // default 16999
}

// validate reports every problem at once, each with its key and the `continuum redis-cluster
// create` flag it becomes.
func (c *RedisClusterConfig) validate() error {
	var errs kind.FieldErrors
	if c.Cluster == "" {
		errs.Add("cluster", "--member", "required: name the cluster whose redis members to join")
	}
	if c.ReplicasPerMaster < 0 {
		errs.Add("replicas_per_master", "--replicas", "%d: must be >= 0", c.ReplicasPerMaster)
	}
	errs.CheckPort("port", "--listen", c.Port)
	return errs.Err()
}

func redisClusterCommand(env kind.Env, c *RedisClusterConfig) (kind.Command, error) {
	names := make([]string, 0, len(env.Components))
	for name := range env.Components {
		names = append(names, name)
	}
	sort.Strings(names)
	var addrs []string
	for _, name := range names {
		m := env.Components[name]
		rc, ok := m.Config.(*RedisConfig)
		if !ok || rc.Cluster != c.Cluster {
			continue
		}
		addrs = append(addrs, net.JoinHostPort(env.NodeHost(m.Node), strconv.Itoa(rc.Port)))
	}
	if need := 3 * (1 + c.ReplicasPerMaster); len(addrs) < need {
		return kind.Command{}, fmt.Errorf("redis-cluster %s: %d redis members in cluster %q, need at least %d (3 masters, %d replicas each)",
			env.Instance, len(addrs), c.Cluster, need, c.ReplicasPerMaster)
	}
	f := baselinescmd.DefaultCreateFlags()
	f.Config.Addrs, f.Config.Replicas, f.Config.Listen = addrs, c.ReplicasPerMaster, ":"+strconv.Itoa(c.Port)
	args := append([]string{env.Binary, "redis-cluster", "create"}, cli.Args(baselinescmd.DefaultCreateFlags(), f)...)
	return kind.Command{Args: args, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.Port)}, nil
}
