package shareddata

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// reloadOnLoss makes a Redis Cluster client reload its slot map whenever a command fails on
// the network. go-redis otherwise keeps dialing a lost master's address: the replica that
// took over sends no MOVED to a client that cannot reach the old master, so the client would
// stay stuck until its state ages out. A reload is lazy and debounced inside go-redis, so
// calling it on every failure is cheap.
type reloadOnLoss struct{ c *redis.ClusterClient }

func (h reloadOnLoss) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnLoss) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnLoss) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnLoss) check(ctx context.Context, err error) {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		h.c.ReloadState(ctx)
	}
}

// NewRedisClusterClient is a go-redis Cluster client that recovers from a lost master (see reloadOnLoss).
func NewRedisClusterClient(opt *redis.ClusterOptions) *redis.ClusterClient {
	c := redis.NewClusterClient(opt)
	c.AddHook(reloadOnLoss{c})
	return c
}
