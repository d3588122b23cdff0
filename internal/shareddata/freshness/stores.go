package freshness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/netcheck"
	"github.com/continuum-project/continuum/internal/shareddata"
)

// open connects to the backend and chooses the key, new to this probe.
func open(ctx context.Context, cfg Config) (store, string, error) {
	key := "/freshness/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if cfg.Backend == BackendRedisCluster {
		return openRedisCluster(ctx, cfg, key)
	}
	return openEtcd(ctx, cfg, key)
}

type etcdProbe struct {
	key    string
	writer *clientv3.Client
	// members[i] talks to cfg.Read[i] alone, with serializable reads: what that member has.
	members []*clientv3.Client
	names   []string
}

// etcdClient checks first that something listens at ep: the client dials lazily, so a wrong
// address would otherwise show only as every probe timing out.
func etcdClient(ctx context.Context, ep string) (*clientv3.Client, error) {
	if err := netcheck.Listening(ctx, []string{ep}, netcheck.DefaultTimeout); err != nil {
		return nil, fmt.Errorf("freshness: %w (is an etcd or continuum kv server there?)", err)
	}
	return clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

func openEtcd(ctx context.Context, cfg Config, key string) (*etcdProbe, string, error) {
	p := &etcdProbe{key: key}
	var err error
	if p.writer, err = etcdClient(ctx, cfg.Write); err != nil {
		return nil, "", err
	}
	for _, ep := range cfg.Read {
		c, err := etcdClient(ctx, ep)
		if err != nil {
			p.close()
			return nil, "", err
		}
		p.members = append(p.members, c)
	}
	p.names = readerNames(cfg.Read)
	if cfg.Leader != "" && cfg.Backend == BackendEtcd {
		if err := moveLeader(ctx, append([]string{cfg.Write}, cfg.Read...), cfg.Leader); err != nil {
			p.close()
			return nil, "", err
		}
	}
	return p, key, nil
}

// readerNames names readers by their endpoints' hosts, or by host and port when several share
// a host (members on one machine, as in tests).
func readerNames(endpoints []string) []string {
	names := make([]string, len(endpoints))
	seen := map[string]bool{}
	for i, ep := range endpoints {
		names[i] = hostOf(ep, false)
		if seen[names[i]] {
			for j, ep := range endpoints {
				names[j] = hostOf(ep, true)
			}
			return names
		}
		seen[names[i]] = true
	}
	return names
}

// hostOf names a reader by its endpoint's host (and port).
func hostOf(ep string, port bool) string {
	h := strings.TrimPrefix(strings.TrimPrefix(ep, "http://"), "https://")
	if host, _, err := net.SplitHostPort(h); err == nil && !port {
		h = host
	}
	return strings.NewReplacer(":", "_", "/", "_").Replace(h)
}

// moveLeader makes the member at leader the etcd leader: the current leader hands over. An
// election or another probe's hand-over may be under way (no leader, or a move refused): it
// tries again until ctx ends.
func moveLeader(ctx context.Context, endpoints []string, leader string) error {
	target, err := etcdClient(ctx, leader)
	if err != nil {
		return err
	}
	defer target.Close()
	var last error
	for {
		done, err := moveLeaderOnce(ctx, target, endpoints, leader)
		if done {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("move etcd leadership to %s: %w", leader, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// moveLeaderOnce makes one attempt; done is false when it is worth trying again.
func moveLeaderOnce(ctx context.Context, target *clientv3.Client, endpoints []string, leader string) (done bool, err error) {
	st, err := target.Status(ctx, leader)
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", leader, err)
	}
	if st.Leader == st.Header.MemberId {
		return true, nil
	}
	for _, ep := range endpoints {
		c, err := etcdClient(ctx, ep)
		if err != nil {
			return true, err
		}
		s, err := c.Status(ctx, ep)
		if err == nil && s.Header.MemberId == s.Leader {
			_, err = c.MoveLeader(ctx, st.Header.MemberId)
			c.Close()
			if err != nil {
				return false, err
			}
			return true, nil
		}
		c.Close()
	}
	return false, errors.New("no endpoint is the leader")
}

func (p *etcdProbe) write(ctx context.Context, v int64) error {
	s := strconv.FormatInt(v, 10)
	_, err := p.writer.Txn(ctx).Then(clientv3.OpPut(p.key, s), clientv3.OpPut(fmt.Sprintf("%s/log/%020d", p.key, v), s)).Commit()
	return err
}

func (p *etcdProbe) logged(ctx context.Context) ([]int64, error) {
	resp, err := p.writer.Get(ctx, p.key+"/log/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		v, err := parseCounter(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("log entry %s: %w", kv.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *etcdProbe) readers() []reader {
	var rs []reader
	for i, c := range p.members {
		rs = append(rs, reader{name: p.names[i], read: func(ctx context.Context) (int64, error) {
			resp, err := c.Get(ctx, p.key, clientv3.WithSerializable())
			if err != nil || len(resp.Kvs) == 0 {
				return 0, err
			}
			return parseCounter(resp.Kvs[0].Value)
		}})
	}
	return rs
}

func (p *etcdProbe) close() {
	if p.writer != nil {
		p.writer.Close()
	}
	for _, c := range p.members {
		c.Close()
	}
}

type redisProbe struct {
	key    string
	writer *redis.ClusterClient
	// replicas[i] talks to one replica of the key's slot alone (READONLY): what that replica
	// has. A Cluster client would send reads to the master once a replica stops answering.
	replicas []*redis.Client
	names    []string
}

func openRedisCluster(ctx context.Context, cfg Config, base string) (*redisProbe, string, error) {
	seeds := append([]string{cfg.Write}, cfg.Read...)
	p := &redisProbe{writer: shareddata.NewRedisClusterClient(&redis.ClusterOptions{Addrs: seeds, DialTimeout: time.Second}), key: base}
	if cfg.Leader != "" {
		key, err := keyMasteredAt(ctx, p.writer, base, cfg.Leader)
		if err != nil {
			p.close()
			return nil, "", err
		}
		p.key = key
	}
	replicas, err := slotReplicas(ctx, p.writer, p.key)
	if err != nil {
		p.close()
		return nil, "", err
	}
	for _, addr := range replicas {
		p.replicas = append(p.replicas, redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }}))
		p.names = append(p.names, "replica_"+hostOf(addr, true))
	}
	return p, p.key, nil
}

// slotReplicas lists the replicas of the master of key's slot, from CLUSTER NODES (CLUSTER
// SLOTS leaves out replicas a node does not yet consider in sync). It waits up to 10 s for
// one, as a new cluster's nodes learn of each other's replicas by gossip.
func slotReplicas(ctx context.Context, c *redis.ClusterClient, key string) ([]string, error) {
	master, err := c.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	masterAddr := master.Options().Addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, err := master.ClusterNodes(ctx).Result()
		if err != nil {
			return nil, err
		}
		// <id> <ip:port@cport> <flags> <master id> ...: the master's own line gives its id.
		var masterID string
		lines := strings.Split(strings.TrimSpace(text), "\n")
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 3 && strings.Contains(f[2], "myself") {
				masterID = f[0]
			}
		}
		var out []string
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 3 && f[3] == masterID && strings.Contains(f[2], "slave") && !strings.Contains(f[2], "fail") {
				addr, _, _ := strings.Cut(f[1], "@")
				out = append(out, addr)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the master %s of %q has no replica", masterAddr, key)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// keyMasteredAt finds a key (base plus a hash tag) whose slot's master is at leader
// (host:port, the host a name or an address).
func keyMasteredAt(ctx context.Context, c *redis.ClusterClient, base, leader string) (string, error) {
	host, port, err := net.SplitHostPort(leader)
	if err != nil {
		return "", fmt.Errorf("leader %q: want host:port", leader)
	}
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return "", fmt.Errorf("leader %q: %w", leader, err)
	}
	//lint:ignore SA1019 CLUSTER SLOTS still answers on the Redis this runs against (Debian's 7.0); CLUSTER SHARDS' reply is walked differently: a change of its own
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	mastered := func(slot int64) bool {
		for _, s := range slots {
			if slot >= int64(s.Start) && slot <= int64(s.End) && len(s.Nodes) > 0 {
				a, p, _ := net.SplitHostPort(s.Nodes[0].Addr)
				for _, ip := range ips {
					if a == ip && p == port {
						return true
					}
				}
			}
		}
		return false
	}
	for i := 0; i < 10000; i++ {
		key := base + "{" + strconv.Itoa(i) + "}"
		slot, err := c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return "", err
		}
		if mastered(slot) {
			return key, nil
		}
	}
	return "", errors.New("no key found whose slot " + leader + " masters")
}

// logKey is the list of written numbers, in the key's slot (so one MULTI writes both).
func (p *redisProbe) logKey() string {
	if strings.Contains(p.key, "{") {
		return p.key + ":log" // the key's hash tag comes first and decides the slot
	}
	return "{" + p.key + "}:log" // hashes as the key itself
}

// write sets the key and appends to the log in one MULTI; the clients reload the slot map
// after a failure (see shareddata.NewRedisClusterClient), as the platform's own do.
func (p *redisProbe) write(ctx context.Context, v int64) error {
	_, err := p.writer.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, p.key, v, 0)
		pipe.RPush(ctx, p.logKey(), v)
		return nil
	})
	return err
}

func (p *redisProbe) logged(ctx context.Context) ([]int64, error) {
	vals, err := p.writer.LRange(ctx, p.logKey(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(vals))
	for _, s := range vals {
		v, err := parseCounter([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("log entry %q: %w", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *redisProbe) readers() []reader {
	var rs []reader
	for i, c := range p.replicas {
		rs = append(rs, reader{name: p.names[i], read: func(ctx context.Context) (int64, error) {
			b, err := c.Get(ctx, p.key).Bytes()
			if errors.Is(err, redis.Nil) {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			return parseCounter(b)
		}})
	}
	return rs
}

func (p *redisProbe) close() {
	p.writer.Close()
	for _, c := range p.replicas {
		c.Close()
	}
}
