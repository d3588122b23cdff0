package kvtarget

import (
	"context"
	"fmt"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
	"github.com/continuum-project/continuum/internal/netcheck"
)

// YCSBConfig is `continuum load ycsb`'s configuration: YCSB against one running store.
type YCSBConfig struct {
	Target Target
	// Conns is the client's connections (Options); 0 picks a default for the kind
	// and the concurrency.
	Conns int
	YCSB  ycsb.Config
	// ReadyTimeout bounds the wait for the target to answer before the first phase (default
	// 30 s): a server that accepts connections may not serve yet.
	ReadyTimeout time.Duration
}

// RunYCSB connects to the target, waits until it answers, and runs the YCSB phases.
func RunYCSB(ctx context.Context, cfg YCSBConfig) (*ycsb.Result, error) {
	if err := cfg.Target.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.YCSB.Validate(); err != nil {
		return nil, err
	}
	// Fail fast where nothing listens; WaitReady's longer wait is for a server that listens
	// but does not serve yet.
	if err := netcheck.Listening(ctx, cfg.Target.Endpoints, netcheck.DefaultTimeout); err != nil {
		return nil, fmt.Errorf("target %s: %w (is the %s server up?)", cfg.Target, err, cfg.Target.Kind)
	}
	st, err := Open(cfg.Target, Options{Conns: DefaultConns(cfg.Target.Kind, cfg.Conns, cfg.YCSB.Run.Clients)})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := WaitReady(ctx, st, cfg.ReadyTimeout); err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Target, err)
	}
	return ycsb.Run(ctx, cfg.YCSB, st)
}

// DefaultConns picks the client's connection count: etcd multiplexes requests over a few gRPC
// connections; Redis needs a connection per request in flight, so its pool covers the
// closed-loop clients.
func DefaultConns(kind string, explicit, clients int) int {
	if explicit > 0 {
		return explicit
	}
	if kind == KindRedis {
		return max(64, clients)
	}
	return 8
}

// WaitReady reads a key until the store answers (a miss is an answer), for at most timeout
// (default 30 s): a server that accepts connections may not serve yet.
func WaitReady(ctx context.Context, st Store, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		err := st.Read(rctx, "ycsb-ready-probe")
		cancel()
		if err == nil || loadgen.ClassifyError(err) == ErrNotFoundType {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
