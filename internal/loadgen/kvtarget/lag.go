package kvtarget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/netcheck"
)

// LagProbe measures replication lag between two members of a cluster that speaks the etcd API:
// each Do writes a unique value on the writer and returns once the reader's watch delivers it,
// so a load generator records, per probe, the time from the intended write to its visibility on
// the reader. A write that does not arrive before the request's deadline is a timeout. Writes
// made during a partition arrive after the heal; with a timeout longer than the partition, their
// latencies show how long the members took to converge.
type LagProbe struct {
	writer, reader *clientv3.Client
	prefix         string
	seq            atomic.Uint64
	keys           uint64

	mu      sync.Mutex
	waiting map[string]chan struct{}
	seen    map[string]bool // delivered before its Do registered (the watch can win the race)

	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{}
}

// NewLagProbe connects to the writer and reader endpoints (http://HOST:PORT) and starts the
// reader's watch on a prefix unique to this probe.
func NewLagProbe(writer, reader string) (*LagProbe, error) {
	// Fail fast, naming the address, where nothing listens (the watch would only time out).
	if err := netcheck.Listening(context.Background(), []string{writer, reader}, netcheck.DefaultTimeout); err != nil {
		return nil, fmt.Errorf("lag probe: %w", err)
	}
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	p := &LagProbe{prefix: "/continuum/lag-probe/" + hex.EncodeToString(id[:]) + "/", keys: 64,
		waiting: map[string]chan struct{}{}, seen: map[string]bool{}, done: make(chan struct{}), ready: make(chan struct{})}
	var err error
	if p.writer, err = newProbeClient(writer); err != nil {
		return nil, err
	}
	if p.reader, err = newProbeClient(reader); err != nil {
		p.writer.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.watch(ctx)
	select {
	case <-p.ready:
	case <-time.After(10 * time.Second):
		p.Close()
		return nil, fmt.Errorf("lag probe: no watch on %s after 10s", reader)
	}
	return p, nil
}

func newProbeClient(endpoint string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", endpoint, err)
	}
	return c, nil
}

// watch delivers values seen on the reader to the waiting probes, re-watching from the last
// revision when the stream breaks (a partition, a restart of the reader).
func (p *LagProbe) watch(ctx context.Context) {
	defer close(p.done)
	var rev int64
	first := true
	for ctx.Err() == nil {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCreatedNotify()}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev+1))
		}
		wc := p.reader.Watch(clientv3.WithRequireLeader(ctx), p.prefix, opts...)
		for resp := range wc {
			if resp.Created && first {
				first = false
				close(p.ready)
			}
			if resp.CompactRevision > 0 {
				rev = resp.CompactRevision - 1
			}
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision
				p.deliver(string(ev.Kv.Value))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *LagProbe) deliver(v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch, ok := p.waiting[v]; ok {
		close(ch)
		delete(p.waiting, v)
		return
	}
	p.seen[v] = true
}

// Do writes the next value on the writer and waits until the reader has it.
func (p *LagProbe) Do(ctx context.Context) error {
	n := p.seq.Add(1)
	v := strconv.FormatUint(n, 10)
	ch := make(chan struct{})
	p.mu.Lock()
	p.waiting[v] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, v)
		delete(p.seen, v)
		p.mu.Unlock()
	}()
	if _, err := p.writer.Put(ctx, p.prefix+strconv.FormatUint(n%p.keys, 10), v); err != nil {
		return etcdErr(err)
	}
	p.mu.Lock()
	early := p.seen[v]
	p.mu.Unlock()
	if early {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errNotVisible
		}
		return ctx.Err()
	}
}

// errNotVisible: the write succeeded but the reader did not show it before the deadline.
var errNotVisible = &Error{Type: "not_visible", Err: errors.New("written, not visible on the reader before the deadline")}

// Close stops the watch and closes the clients.
func (p *LagProbe) Close() {
	p.cancel()
	<-p.done
	p.writer.Close()
	p.reader.Close()
}

// LagConfig is a replication-lag run: probes from Writer to Reader (http://HOST:PORT each) at
// Load's rate, one series named "lag".
type LagConfig struct {
	Writer, Reader string
	Load           loadgen.Config
}

// RunLag runs the probes and writes the results as loadgen does.
func RunLag(ctx context.Context, cfg LagConfig) (*loadgen.Result, error) {
	for _, e := range []string{cfg.Writer, cfg.Reader} {
		if err := (Target{Kind: KindKV, Endpoints: []string{e}}).Validate(); err != nil {
			return nil, err
		}
	}
	p, err := NewLagProbe(cfg.Writer, cfg.Reader)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return loadgen.Run(ctx, cfg.Load, []loadgen.Series{{Name: "lag", Target: p}})
}
