package shareddata

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The state queue's scripts. KEYS are the head and tail keys; the entries share their hash
// tag, so the scripts touch one Cluster slot. Indices stay far below 2^53, where Lua's
// numbers are exact and print without an exponent.
var (
	statePushScript = redis.NewScript(`
local head = tonumber(redis.call('GET', KEYS[1]) or '0')
local tail = tonumber(redis.call('GET', KEYS[2]) or '0')
local cap = tonumber(ARGV[2])
redis.call('SET', ARGV[1] .. head, ARGV[3])
head = head + 1
while head - tail > cap do
  redis.call('DEL', ARGV[1] .. tail)
  tail = tail + 1
end
redis.call('SET', KEYS[1], head)
redis.call('SET', KEYS[2], tail)
local out = {}
for i = tail, head - 1 do out[#out + 1] = redis.call('GET', ARGV[1] .. i) end
return out`)
	stateReadScript = redis.NewScript(`
local head = tonumber(redis.call('GET', KEYS[1]) or '0')
local tail = tonumber(redis.call('GET', KEYS[2]) or '0')
local out = {}
for i = tail, head - 1 do out[#out + 1] = redis.call('GET', ARGV[1] .. i) end
return out`)
	stateClearScript = redis.NewScript(`
local head = tonumber(redis.call('GET', KEYS[1]) or '0')
local tail = tonumber(redis.call('GET', KEYS[2]) or '0')
for i = tail, head - 1 do redis.call('DEL', ARGV[1] .. i) end
redis.call('DEL', KEYS[1], KEYS[2])
return 1`)
)

func stateKeys(consumer string) []string {
	return []string{redisStateHead(consumer), redisStateTail(consumer)}
}

func (s *redisStore) StatePush(ctx context.Context, consumer string, capacity int, value []byte) ([][]byte, error) {
	if err := validNames("consumer", consumer); err != nil {
		return nil, err
	}
	if err := validCapacity(capacity); err != nil {
		return nil, err
	}
	res, err := statePushScript.Run(ctx, s.rdb, stateKeys(consumer), redisStatePrefix(consumer), capacity, value).Slice()
	if err != nil {
		return nil, err
	}
	return byteSlices(res), nil
}

func (s *redisStore) StateRead(ctx context.Context, consumer string, opts ...ReadOption) ([][]byte, error) {
	if err := validNames("consumer", consumer); err != nil {
		return nil, err
	}
	res, err := stateReadScript.RunRO(ctx, s.reader(readOpts(opts)), stateKeys(consumer), redisStatePrefix(consumer)).Slice()
	if err != nil {
		return nil, err
	}
	return byteSlices(res), nil
}

func (s *redisStore) StateIndices(ctx context.Context, consumer string, opts ...ReadOption) (int64, int64, error) {
	if err := validNames("consumer", consumer); err != nil {
		return 0, 0, err
	}
	vals, err := s.reader(readOpts(opts)).MGet(ctx, stateKeys(consumer)...).Result()
	if err != nil {
		return 0, 0, err
	}
	var idx [2]int64
	for i, v := range vals {
		if str, ok := v.(string); ok {
			if idx[i], err = strconv.ParseInt(str, 10, 64); err != nil {
				return 0, 0, fmt.Errorf("state queue %s: index %q is not a number", consumer, str)
			}
		}
	}
	return idx[0], idx[1], nil
}

func (s *redisStore) StateClear(ctx context.Context, consumer string) error {
	if err := validNames("consumer", consumer); err != nil {
		return err
	}
	return stateClearScript.Run(ctx, s.rdb, stateKeys(consumer), redisStatePrefix(consumer)).Err()
}

func byteSlices(res []any) [][]byte {
	out := make([][]byte, 0, len(res))
	for _, v := range res {
		str, _ := v.(string)
		out = append(out, []byte(str))
	}
	return out
}

func (s *redisStore) StatePut(ctx context.Context, consumer string, index int64, value []byte) error {
	if err := checkIndex(consumer, index); err != nil {
		return err
	}
	return s.rdb.Set(ctx, redisStateEntry(consumer, index), value, 0).Err()
}

func (s *redisStore) StateDelete(ctx context.Context, consumer string, index int64) error {
	if err := checkIndex(consumer, index); err != nil {
		return err
	}
	return s.rdb.Del(ctx, redisStateEntry(consumer, index)).Err()
}

func (s *redisStore) StateSetIndices(ctx context.Context, consumer string, head, tail int64) error {
	if err := checkIndex(consumer, tail); err != nil {
		return err
	}
	if head < tail {
		return fmt.Errorf("state indices: head %d below tail %d", head, tail)
	}
	return s.rdb.MSet(ctx, redisStateHead(consumer), head, redisStateTail(consumer), tail).Err()
}
