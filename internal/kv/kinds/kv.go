package kinds

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/kv/kvcmd"
	"github.com/continuum-project/continuum/internal/spec"
)

// KindName is the component kind of a continuum kv member.
const KindName = "kv"

// eventsFile is where a member writes its replication events, in its output directory.
const eventsFile = "events.jsonl"

func init() {
	kind.Register(kind.Def[Config]{
		Name:      KindName,
		System:    "kv",
		Role:      kind.RoleComponent,
		Summary:   "continuum kv: the etcd-v3-compatible store (`continuum kv`); members with the same `cluster` replicate",
		Defaults:  func() *Config { return &Config{ClientPort: 2379, PeerPort: 2380} },
		Validate:  (*Config).validate,
		Command:   command,
		Endpoints: func(c *Config) []kind.Endpoint { return c.endpoints() },
		Metrics:   metrics,
	})
}

// Config is the `config:` of a kv component.
type Config struct {
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
	// PeerCompression is `continuum kv --peer-compression` (s2, gzip or none; absent: s2).
	PeerCompression string `yaml:"peer_compression"`
}

func (c *Config) endpoints() []kind.Endpoint {
	eps := []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolEtcdV3, Port: c.ClientPort}}
	if c.Cluster != "" {
		eps = append(eps, kind.Endpoint{Name: "peer", Protocol: "kv-peer", Port: c.PeerPort})
	}
	return eps
}

// validate reports every problem at once, each with its key and the `continuum kv` flag it
// becomes.
func (c *Config) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("client_port", "--listen-client-urls", c.ClientPort)
	errs.CheckPort("peer_port", "--listen-peer-urls", c.PeerPort)
	if c.PeerPort == c.ClientPort {
		errs.Add("peer_port", "--listen-peer-urls", "client_port and peer_port are both %d", c.ClientPort)
	}
	if len(c.Peers) > 0 && c.Cluster == "" {
		errs.Add("peers", "--peers", "peers needs cluster: only members of one cluster pull from each other")
	}
	if l := c.PeerBatchLinger; l != nil {
		if c.Cluster == "" {
			errs.Add("peer_batch_linger", "--peer-batch-linger", "peer_batch_linger needs cluster: a single member sends no changes")
		} else if l.Duration < 0 || l.Duration >= time.Second {
			errs.Add("peer_batch_linger", "--peer-batch-linger", "%v: want 0 (no linger) up to below 1s (the heartbeat)", l.Duration)
		}
	}
	switch c.PeerCompression {
	case "", "s2", "gzip", "none":
		if c.PeerCompression != "" && c.Cluster == "" {
			errs.Add("peer_compression", "--peer-compression", "peer_compression needs cluster: a single member sends no changes")
		}
	default:
		errs.Add("peer_compression", "--peer-compression", "%q: want s2, gzip or none", c.PeerCompression)
	}
	switch c.Fsync {
	case "", "batch", "always", "never":
	default:
		errs.Add("fsync", "--fsync", "%q: want batch, always or never", c.Fsync)
	}
	errs.CheckDataDir("--data-dir", c.DataDir)
	return errs.Err()
}

func command(env kind.Env, c *Config) (kind.Command, error) {
	dir := kind.DataDir(env, c.DataDir)
	f := kvcmd.DefaultFlags()
	f.Server.Name, f.Server.DataDir = env.Instance, dir
	f.ListenClientURLs = "http://0.0.0.0:" + strconv.Itoa(c.ClientPort)
	f.AdvertiseClientURLs = env.AdvertisedURL(c.ClientPort)
	f.Server.EventsFile = filepath.Join(env.OutDir, eventsFile)
	if c.Fsync != "" {
		f.Fsync = c.Fsync
	}
	if c.Cluster != "" {
		members := env.MemberURLs(func(_ string, m kind.Component) (int, bool) {
			if mc, ok := m.Config.(*Config); ok && m.Kind == KindName && mc.Cluster == c.Cluster {
				return mc.PeerPort, true
			}
			return 0, false
		})
		for _, p := range c.Peers {
			if _, ok := members[p]; !ok || p == env.Instance {
				return kind.Command{}, fmt.Errorf("kv %s: peers names %q, which is not another member of cluster %q", env.Instance, p, c.Cluster)
			}
		}
		f.ListenPeerURLs = "http://0.0.0.0:" + strconv.Itoa(c.PeerPort)
		f.InitialAdvertisePeerURLs = env.AdvertisedURL(c.PeerPort)
		f.InitialCluster = kind.InitialCluster(members)
		f.Server.InitialClusterToken = c.Cluster
		f.Peers = strings.Join(c.Peers, ",")
		if c.PeerBatchLinger != nil {
			f.PeerBatchLinger = c.PeerBatchLinger.Duration
		}
		if c.PeerCompression != "" {
			f.PeerCompression = c.PeerCompression
		}
	}
	args := append([]string{env.Binary, "kv"}, cli.Args(kvcmd.DefaultFlags(), f)...)
	return kind.Command{Args: args, DataDirs: []string{dir}, ReadyAddr: "127.0.0.1:" + strconv.Itoa(c.ClientPort)}, nil
}
