package kvprefix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/backoff"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// defaultPageSize bounds one list request, so a large registry does not become one huge
// response. Pages are read at one revision, so together they are one consistent view.
const defaultPageSize = 1000

// Retry delays after a failed list or a broken watch.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 10 * time.Second
)

// retryBackoff doubles the delay after each failure up to maxRetry, with jitter (50..100 %) so
// that the proxies of a whole cluster do not hit a recovering server in step.
func retryBackoff() backoff.Backoff {
	return backoff.Backoff{Min: minRetry, Max: maxRetry, Jitter: 0.5}
}

// Source watches a key prefix and delivers its records as snapshots.
type Source struct {
	cfg    Config
	client *clientv3.Client // nil: Run dials cfg.Endpoints and closes the client on return
	log    *slog.Logger

	pageSize int64
	// afterList, when set (tests only), runs between a list and the watch that follows it.
	afterList func()
}

// New returns a source for cfg. client may be nil, in which case Run connects to
// cfg.Endpoints itself; a client passed in is used as is (its endpoints win) and not closed.
func New(cfg Config, client *clientv3.Client) (*Source, error) {
	if cfg.DialTimeout.Duration == 0 {
		cfg.DialTimeout.Duration = DefaultDialTimeout
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	check := cfg
	if client != nil {
		// The client's endpoints (which may use TLS or unix sockets, configured by the
		// caller) are its business; they only name the source.
		check.Endpoints = []string{DefaultEndpoint}
		cfg.Endpoints = client.Endpoints()
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Source{cfg: cfg, client: client, pageSize: defaultPageSize}
	s.log = log.With("source", s.Name())
	return s, nil
}

// Name is "kv:<endpoints><prefix>".
func (s *Source) Name() string {
	return "kv:" + strings.Join(s.cfg.Endpoints, ",") + s.cfg.Prefix
}

// Run lists the prefix, delivers the first snapshot, then watches the prefix from the list's
// revision on and delivers a snapshot after every watch response that changes it. When the
// servers cannot be reached it keeps the last snapshot and retries with backoff; when the watch
// breaks or its revision was compacted it lists again. It returns nil when ctx is done, with
// its watch cancelled and (if it dialled) its client closed.
func (s *Source) Run(ctx context.Context, update func(discovery.Snapshot)) error {
	cli := s.client
	if cli == nil {
		var err error
		cli, err = clientv3.New(clientv3.Config{
			Endpoints:   s.cfg.Endpoints,
			DialTimeout: s.cfg.DialTimeout.Duration,
			Context:     ctx,
			// The client's own zap logs would bypass the proxy's log; this source logs
			// every failure that matters to it.
			Logger: zap.NewNop(),
		})
		if err != nil {
			return fmt.Errorf("kv client for %v: %w", s.cfg.Endpoints, err)
		}
		defer cli.Close()
	}

	var (
		last  discovery.Snapshot
		sent  bool
		retry = retryBackoff()
	)
	emit := func(st *state) {
		snap := st.snapshot()
		if !sent || !reflect.DeepEqual(snap, last) {
			update(snap)
			last, sent = snap, true
		}
	}
	for {
		st, rev, err := s.list(ctx, cli)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("kv list failed; keeping the last snapshot and retrying", "err", err, "retry_in", retry.Next())
			if !retry.Wait(ctx) {
				return nil
			}
			continue
		}
		emit(st)
		if s.afterList != nil {
			s.afterList()
		}
		healthy, err := s.watch(ctx, cli, st, rev+1, emit)
		if ctx.Err() != nil {
			return nil
		}
		if healthy {
			retry.Reset()
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			// Routine: the revision after our list was compacted before the watch started
			// (or while it was disconnected). The next list is a fresh view; no delay needed.
			s.log.Info("kv watch revision compacted; listing again", "err", err)
			continue
		}
		s.log.Warn("kv watch broke; listing again", "err", err, "retry_in", retry.Next())
		if !retry.Wait(ctx) {
			return nil
		}
	}
}

// list reads the whole prefix at one revision, page by page, and returns the records and
// that revision.
func (s *Source) list(ctx context.Context, cli *clientv3.Client) (*state, int64, error) {
	st := newState()
	end := clientv3.GetPrefixRangeEnd(s.cfg.Prefix)
	from := s.cfg.Prefix
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.pageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout.Duration)
		resp, err := cli.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("get %s: %w", s.cfg.Prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			s.apply(st, kv.Key, kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return st, rev, nil
		}
		// Next page: the smallest key after the last one.
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// watch applies watch responses from rev on until the watch ends. healthy says whether the
// watch delivered anything, which proves the connection worked and resets the retry backoff.
func (s *Source) watch(ctx context.Context, cli *clientv3.Client, st *state, rev int64, emit func(*state)) (healthy bool, err error) {
	// Cancelling wctx is what releases the watch on the server; it must happen on every return.
	// WithRequireLeader makes an etcd member that lost its leader end the watch instead of
	// silently serving nothing; we then list again, possibly from another endpoint.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := cli.Watch(wctx, s.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return healthy, fmt.Errorf("watch from revision %d (compacted at %d): %w", rev, resp.CompactRevision, rpctypes.ErrCompacted)
		}
		if err := resp.Err(); err != nil {
			return healthy, fmt.Errorf("watch %s: %w", s.cfg.Prefix, err)
		}
		healthy = true
		if len(resp.Events) == 0 {
			continue // progress notification
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				delete(st.records, string(ev.Kv.Key))
				continue
			}
			s.apply(st, ev.Kv.Key, ev.Kv.Value)
		}
		emit(st)
	}
	return healthy, errors.New("watch channel closed")
}

// apply stores key's record, or drops it when the value is invalid: the value as it stands is
// what the key says, so an instance whose record became garbage leaves the snapshot.
func (s *Source) apply(st *state, key, value []byte) {
	r, err := parseRecord(s.cfg.Prefix, key, value)
	if err != nil {
		s.log.Warn("invalid kv record skipped", "key", string(key), "err", err)
		delete(st.records, string(key))
		return
	}
	st.records[string(key)] = r
}

// state is the records under the prefix, by key.
type state struct{ records map[string]record }

func newState() *state { return &state{records: map[string]record{}} }

// snapshot is canonical (instances sorted, empty maps nil) so that Run can compare snapshots.
func (st *state) snapshot() discovery.Snapshot {
	var snap discovery.Snapshot
	for _, r := range st.records {
		if r.node != "" {
			if snap.Nodes == nil {
				snap.Nodes = map[string]discovery.NodeLoad{}
			}
			snap.Nodes[r.node] = r.load
			continue
		}
		snap.Instances = append(snap.Instances, r.inst)
	}
	slices.SortFunc(snap.Instances, func(a, b discovery.Instance) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.ID, b.ID))
	})
	return snap
}
