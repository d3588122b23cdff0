package shareddata

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisStore is the backend for Redis, standalone or Cluster, through go-redis.
type redisStore struct {
	backend string
	rdb     redis.UniversalClient
	// replicas serves Serializable reads from replicas when Config.ReadReplicas is set on a
	// Cluster; otherwise it is rdb.
	replicas  redis.UniversalClient
	retention int64
}

func openRedis(ctx context.Context, cfg Config) (*redisStore, error) {
	s := &redisStore{backend: cfg.Backend, retention: cfg.StreamRetention}
	if cfg.Backend == BackendRedisCluster {
		c := NewRedisClusterClient(&redis.ClusterOptions{Addrs: cfg.Endpoints, DialTimeout: cfg.DialTimeout})
		s.rdb, s.replicas = c, c
		if cfg.ReadReplicas {
			s.replicas = NewRedisClusterClient(&redis.ClusterOptions{Addrs: cfg.Endpoints, DialTimeout: cfg.DialTimeout,
				ReadOnly: true, RouteRandomly: true})
		}
	} else {
		if len(cfg.Endpoints) != 1 {
			return nil, fmt.Errorf("shareddata redis: %d endpoints, want one (use backend %s for several)", len(cfg.Endpoints), BackendRedisCluster)
		}
		c := redis.NewClient(&redis.Options{Addr: cfg.Endpoints[0], DialTimeout: cfg.DialTimeout})
		s.rdb, s.replicas = c, c
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.Close()
		return nil, fmt.Errorf("shareddata %s %v: %w", cfg.Backend, cfg.Endpoints, err)
	}
	return s, nil
}

func (s *redisStore) Backend() string { return s.backend }

func (s *redisStore) Close() error {
	err := s.rdb.Close()
	if s.replicas != s.rdb {
		_ = s.replicas.Close()
	}
	return err
}

// reader is the client a read with these options goes to.
func (s *redisStore) reader(o readOptions) redis.UniversalClient {
	if o.consistency == Serializable {
		return s.replicas
	}
	return s.rdb
}

func sdlKeys(ns string, keys []string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		if err := validKey(k); err != nil {
			return nil, err
		}
		out[i] = redisSDLData(ns) + k
	}
	return out, nil
}

func (s *redisStore) Set(ctx context.Context, ns string, pairs ...Pair) error {
	return s.SetAndPublish(ctx, ns, nil, pairs...)
}

// publishScript writes data keys and appends events to streams, atomically. Every entry gets
// a field s, the stream's publication number from a counter beside it (<stream>#seq), so a
// subscriber sees exactly when trimming (MAXLEN) dropped entries it had not read. With a
// publication counter (an SDL namespace's, {<ns>}#p), every entry also gets p, the number of
// the publication across the namespace's streams, and i, its index in the publication: stream
// IDs are per stream (one script gives entries on two streams the same ID, and two scripts in one
// millisecond give one stream's entry the ID another stream's got in the first), so (p, i) is what
// orders a multi-channel subscription's messages.
//
// KEYS: the np data keys, then per event its stream and its counter, then the publication
// counter if any. ARGV: retention, np, the number of events, the np values, then per event its
// name and value.
var publishScript = redis.NewScript(`
local np = tonumber(ARGV[2])
local ne = tonumber(ARGV[3])
for i = 1, np do redis.call('SET', KEYS[i], ARGV[3 + i]) end
local p = false
if #KEYS > np + 2 * ne then p = redis.call('INCR', KEYS[#KEYS]) end
for j = 0, ne - 1 do
  local seq = redis.call('INCR', KEYS[np + 2 + 2 * j])
  if p then
    redis.call('XADD', KEYS[np + 1 + 2 * j], 'MAXLEN', '~', ARGV[1], '*',
      'n', ARGV[4 + np + 2 * j], 'v', ARGV[5 + np + 2 * j], 's', seq, 'p', p, 'i', j)
  else
    redis.call('XADD', KEYS[np + 1 + 2 * j], 'MAXLEN', '~', ARGV[1], '*',
      'n', ARGV[4 + np + 2 * j], 'v', ARGV[5 + np + 2 * j], 's', seq)
  end
end
return 1`)

func seqKey(stream string) string { return stream + "#seq" }

// publish runs publishScript. All keys share one hash tag (one Cluster slot). pubKey is the
// publication counter ("" for none).
func (s *redisStore) publish(ctx context.Context, pairs []Pair, prefix string, streams, names []string, values [][]byte, pubKey string) error {
	keys := make([]string, 0, len(pairs)+2*len(streams)+1)
	args := make([]any, 0, 3+len(pairs)+2*len(streams))
	args = append(args, s.retention, len(pairs), len(streams))
	for _, p := range pairs {
		keys = append(keys, prefix+p.Key)
		args = append(args, p.Value)
	}
	for i, st := range streams {
		keys = append(keys, st, seqKey(st))
		args = append(args, names[i], values[i])
	}
	if pubKey != "" && len(streams) > 0 {
		keys = append(keys, pubKey)
	}
	return publishScript.Run(ctx, s.rdb, keys, args...).Err()
}

// SetAndPublish writes the pairs and appends each event to its channel's stream in one
// script: atomic, and in one Cluster slot because every key carries the namespace's hash tag.
func (s *redisStore) SetAndPublish(ctx context.Context, ns string, events []Event, pairs ...Pair) error {
	if err := ValidName("namespace", ns); err != nil {
		return err
	}
	if err := validPairs(pairs); err != nil {
		return err
	}
	streams := make([]string, len(events))
	names := make([]string, len(events))
	values := make([][]byte, len(events))
	for i, e := range events {
		if err := ValidName("channel", e.Channel); err != nil {
			return err
		}
		streams[i], names[i], values[i] = redisSDLEvents(ns, e.Channel), e.Channel, e.Data
	}
	if len(pairs) == 0 && len(events) == 0 {
		return nil
	}
	return s.publish(ctx, pairs, redisSDLData(ns), streams, names, values, redisSDLPublications(ns))
}

func (s *redisStore) Get(ctx context.Context, ns string, keys []string, opts ...ReadOption) (map[string][]byte, error) {
	if err := ValidName("namespace", ns); err != nil {
		return nil, err
	}
	rk, err := sdlKeys(ns, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(keys))
	if len(rk) == 0 {
		return out, nil
	}
	vals, err := s.reader(readOpts(opts)).MGet(ctx, rk...).Result()
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		if str, ok := v.(string); ok {
			out[keys[i]] = []byte(str)
		}
	}
	return out, nil
}

var (
	setIfScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`)
	delIfScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end return 0`)
)

func (s *redisStore) sdlKey(ns, key string) (string, error) {
	if err := ValidName("namespace", ns); err != nil {
		return "", err
	}
	if err := validKey(key); err != nil {
		return "", err
	}
	return redisSDLData(ns) + key, nil
}

func (s *redisStore) SetIf(ctx context.Context, ns, key string, oldValue, newValue []byte) (bool, error) {
	k, err := s.sdlKey(ns, key)
	if err != nil {
		return false, err
	}
	n, err := setIfScript.Run(ctx, s.rdb, []string{k}, oldValue, newValue).Int()
	return n == 1, err
}

func (s *redisStore) SetIfNotExists(ctx context.Context, ns, key string, value []byte) (bool, error) {
	k, err := s.sdlKey(ns, key)
	if err != nil {
		return false, err
	}
	return s.rdb.SetNX(ctx, k, value, 0).Result()
}

func (s *redisStore) RemoveIf(ctx context.Context, ns, key string, value []byte) (bool, error) {
	k, err := s.sdlKey(ns, key)
	if err != nil {
		return false, err
	}
	n, err := delIfScript.Run(ctx, s.rdb, []string{k}, value).Int()
	return n == 1, err
}

func (s *redisStore) Remove(ctx context.Context, ns string, keys ...string) error {
	if err := ValidName("namespace", ns); err != nil {
		return err
	}
	rk, err := sdlKeys(ns, keys)
	if err != nil || len(rk) == 0 {
		return err
	}
	return s.rdb.Del(ctx, rk...).Err()
}

// ListKeys scans the node that owns the namespace's slot (all its keys share the hash tag).
func (s *redisStore) ListKeys(ctx context.Context, ns, prefix string) ([]string, error) {
	if err := ValidName("namespace", ns); err != nil {
		return nil, err
	}
	base := redisSDLData(ns)
	node := redis.Cmdable(s.rdb)
	if c, ok := s.rdb.(*redis.ClusterClient); ok {
		m, err := c.MasterForKey(ctx, base)
		if err != nil {
			return nil, err
		}
		node = m
	}
	match := globEscape(base+prefix) + "*"
	var out []string
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			out = append(out, strings.TrimPrefix(k, base))
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Strings(out)
	return out, nil
}

// globEscape quotes the characters Redis's MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *redisStore) groupKey(ns, group string, members []string) (string, error) {
	if err := checkNames("namespace", ns, "group", group); err != nil {
		return "", err
	}
	return redisSDLGroup(ns, group), validNames("member", members...)
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (s *redisStore) AddMember(ctx context.Context, ns, group string, members ...string) error {
	k, err := s.groupKey(ns, group, members)
	if err != nil || len(members) == 0 {
		return err
	}
	return s.rdb.SAdd(ctx, k, anys(members)...).Err()
}

func (s *redisStore) RemoveMember(ctx context.Context, ns, group string, members ...string) error {
	k, err := s.groupKey(ns, group, members)
	if err != nil || len(members) == 0 {
		return err
	}
	return s.rdb.SRem(ctx, k, anys(members)...).Err()
}

func (s *redisStore) GetMembers(ctx context.Context, ns, group string) ([]string, error) {
	k, err := s.groupKey(ns, group, nil)
	if err != nil {
		return nil, err
	}
	m, err := s.rdb.SMembers(ctx, k).Result()
	sort.Strings(m)
	return m, err
}

func (s *redisStore) PublishMetrics(ctx context.Context, group, producer string, value []byte) error {
	if err := checkNames("group", group, "producer", producer); err != nil {
		return err
	}
	return s.publish(ctx, nil, "", []string{redisMetricsStream(group)}, []string{producer}, [][]byte{value}, "")
}

func (s *redisStore) PublishControl(ctx context.Context, group, producer, consumer string, value []byte) error {
	if err := checkNames("group", group, "producer", producer, "consumer", consumer); err != nil {
		return err
	}
	return s.publish(ctx, nil, "", []string{redisCtrlStream(group, producer)}, []string{consumer}, [][]byte{value}, "")
}
