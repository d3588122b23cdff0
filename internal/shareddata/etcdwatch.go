package shareddata

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

var errClosed = errors.New("shareddata: store closed")

func (s *etcdStore) SubscribeMetrics(ctx context.Context, group string, from Cursor) (*Subscription, error) {
	if err := validNames("group", group); err != nil {
		return nil, err
	}
	prefix := etcdMetricsPrefix(group)
	return s.watch(ctx, prefix, from, func(rest string) (Message, bool) { return Message{Name: rest}, true })
}

func (s *etcdStore) SubscribeControl(ctx context.Context, group, producer string, from Cursor) (*Subscription, error) {
	if err := checkNames("group", group, "producer", producer); err != nil {
		return nil, err
	}
	prefix := etcdCtrlPrefix(group, producer)
	return s.watch(ctx, prefix, from, func(rest string) (Message, bool) { return Message{Name: rest}, true })
}

func (s *etcdStore) Subscribe(ctx context.Context, ns string, from Cursor, channels ...string) (*Subscription, error) {
	if err := validSubscription(ns, channels); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, c := range channels {
		want[c] = true
	}
	// One watch over the namespace's events, filtered here: one stream per subscriber, and
	// one revision order across its channels.
	return s.watch(ctx, etcdSDLEvents(ns), from, func(rest string) (Message, bool) {
		return Message{Channel: rest}, want[rest]
	})
}

// etcdCursor is a position in a watch: the event at index idx (0-based, among the puts under
// the watched prefix) of revision rev. One Txn (a SetAndPublish on several channels) puts several
// keys at one revision, so a revision alone does not name one message: resuming from it would
// skip the rest of that revision's events. A plain revision ("<rev>") means after all of it.
type etcdCursor struct {
	rev int64
	idx int64 // -1: the whole revision
}

func (c etcdCursor) String() string {
	return strconv.FormatInt(c.rev, 10) + "." + strconv.FormatInt(c.idx, 10)
}

func parseEtcdCursor(from Cursor, backend string) (etcdCursor, error) {
	r, i, hasIdx := strings.Cut(string(from), ".")
	rev, err := strconv.ParseInt(r, 10, 64)
	idx := int64(-1)
	if err == nil && hasIdx {
		idx, err = strconv.ParseInt(i, 10, 64)
	}
	if err != nil || rev < 0 || (hasIdx && idx < 0) {
		return etcdCursor{}, fmt.Errorf("cursor %q: not a position in %s (<revision> or <revision>.<index>)", from, backend)
	}
	return etcdCursor{rev, idx}, nil
}

// watch delivers the puts under prefix after cursor from. msg turns a key (prefix cut off)
// into a message, or rejects it.
//
// The watch resumes after the last event it processed whenever its stream ends (a member lost
// its leader, the connection broke): from that event's revision, skipping the events of that
// revision up to its index, so no put is skipped or repeated; a start revision the member has
// compacted away is reported as a Gap and the watch goes on from the oldest revision it still
// has.
func (s *etcdStore) watch(ctx context.Context, prefix string, from Cursor, msg func(rest string) (Message, bool)) (*Subscription, error) {
	// last is the last event processed: the watch (re)starts at last.rev and skips the
	// events of that revision with an index <= last.idx.
	var last etcdCursor
	if from == "" {
		// "From now" is pinned to a revision, so a reconnect before the first event still
		// resumes where the subscription began.
		resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return nil, err
		}
		last = etcdCursor{resp.Header.Revision + 1, -1}
	} else {
		c, err := parseEtcdCursor(from, s.backend)
		if err != nil {
			return nil, err
		}
		last = c
		if c.idx < 0 { // after the whole revision
			last = etcdCursor{c.rev + 1, -1}
		}
	}
	return subscribe(ctx, func(ctx context.Context, sub *Subscription, send func(Message) bool) error {
		b := reconnectBackoff()
		for {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			wch := s.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(last.rev), clientv3.WithFilterDelete())
			// The position of the current event: its revision, and its index in it.
			var cur etcdCursor
			for resp := range wch {
				if resp.CompactRevision != 0 {
					last = etcdCursor{resp.CompactRevision, -1}
					if !send(Message{Gap: true, Cursor: Cursor(strconv.FormatInt(resp.CompactRevision-1, 10))}) {
						cancel()
						return nil
					}
					break
				}
				if resp.Err() != nil {
					break
				}
				b.Reset()
				for _, ev := range resp.Events {
					if ev.Kv.ModRevision != cur.rev {
						cur = etcdCursor{ev.Kv.ModRevision, 0}
					} else {
						cur.idx++
					}
					if cur.rev == last.rev && cur.idx <= last.idx {
						continue // delivered before the watch restarted
					}
					last = cur
					m, ok := msg(strings.TrimPrefix(string(ev.Kv.Key), prefix))
					if !ok {
						continue
					}
					m.Value = ev.Kv.Value
					m.Cursor = Cursor(cur.String())
					if !send(m) {
						cancel()
						return nil
					}
				}
			}
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if s.cli.Ctx().Err() != nil {
				return errClosed
			}
			sub.reconnected()
			if !b.Wait(ctx) {
				return nil
			}
		}
	}), nil
}
