package kvtarget

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// indexKey is the sorted set of inserted keys scans range over (YCSB's Redis binding name).
const indexKey = "_indices"

// Redis drives a standalone Redis server through go-redis.
type Redis struct {
	c *redis.Client
}

// NewRedis opens a client to addr with a pool of poolSize connections (default 64).
func NewRedis(addr string, poolSize int) *Redis {
	if poolSize <= 0 {
		poolSize = 64
	}
	return &Redis{c: redis.NewClient(&redis.Options{
		Addr:     addr,
		PoolSize: poolSize,
		// Requests end at the load generator's deadline, not at client timeouts.
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DisableIdentity:       true,
		Protocol:              2,
	})}
}

// Read gets key; a missing key is a not_found error.
func (r *Redis) Read(ctx context.Context, key string) error {
	err := r.c.Get(ctx, key).Err()
	if errors.Is(err, redis.Nil) {
		return errNotFound(key)
	}
	return redisErr(err)
}

// Scan reads count records from startKey on, in key order, through the index.
func (r *Redis) Scan(ctx context.Context, startKey string, count int) error {
	keys, err := r.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: indexKey, Start: "[" + startKey, Stop: "+", ByLex: true, Count: int64(count)}).Result()
	if err != nil || len(keys) == 0 {
		return redisErr(err)
	}
	return redisErr(r.c.MGet(ctx, keys...).Err())
}

// Update sets the record.
func (r *Redis) Update(ctx context.Context, key, value string) error {
	return redisErr(r.c.Set(ctx, key, value, 0).Err())
}

// Insert sets the record and adds it to the scan index in one round trip (a pipeline, not a
// transaction, as YCSB's binding).
func (r *Redis) Insert(ctx context.Context, key, value string) error {
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, value, 0)
		p.ZAdd(ctx, indexKey, redis.Z{Member: key})
		return nil
	})
	return redisErr(err)
}

// ReadModifyWrite gets then sets key (two round trips, as YCSB does).
func (r *Redis) ReadModifyWrite(ctx context.Context, key, value string) error {
	if err := r.Read(ctx, key); err != nil {
		return err
	}
	return r.Update(ctx, key, value)
}

// Ping checks the server answers and is not loading its data.
func (r *Redis) Ping(ctx context.Context) error { return redisErr(r.c.Ping(ctx).Err()) }

// Close closes the pool.
func (r *Redis) Close() error { return r.c.Close() }

// redisErr types server replies by their error prefix ("LOADING ...", "OOM ...", "ERR ...")
// and the client's own conditions; network errors pass through for loadgen to classify.
func redisErr(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, redis.ErrPoolTimeout):
		return &Error{Type: "redis_pool_timeout", Err: err}
	case errors.Is(err, redis.ErrClosed):
		return &Error{Type: "redis_closed", Err: err}
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.Nil) {
		prefix, _, _ := strings.Cut(strings.TrimSpace(re.Error()), " ")
		prefix = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
				return r
			}
			return -1
		}, prefix)
		if prefix == "" || len(prefix) > 32 {
			prefix = "ERR"
		}
		return &Error{Type: "redis_" + prefix, Err: err}
	}
	return err
}
