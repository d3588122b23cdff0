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

// watch delivers the puts under prefix after cursor from. msg turns a key (prefix cut off)
// into a message, or rejects it.
//
// The watch resumes from the revision after the last delivered event whenever its stream
// ends (a member lost its leader, the connection broke), so no put is skipped; a start
// revision the member has compacted away is reported as a Gap and the watch goes on from the
// oldest revision it still has.
func (s *etcdStore) watch(ctx context.Context, prefix string, from Cursor, msg func(rest string) (Message, bool)) (*Subscription, error) {
	var rev int64
	if from == "" {
		// "From now" is pinned to a revision, so a reconnect before the first event still
		// resumes where the subscription began.
		resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return nil, err
		}
		rev = resp.Header.Revision + 1
	} else {
		r, err := strconv.ParseInt(string(from), 10, 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("cursor %q: not a %s revision", from, s.backend)
		}
		rev = r + 1
	}
	return subscribe(ctx, func(ctx context.Context, sub *Subscription, send func(Message) bool) error {
		var b backoff
		for {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			wch := s.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterDelete())
			for resp := range wch {
				if resp.CompactRevision != 0 {
					rev = resp.CompactRevision
					if !send(Message{Gap: true, Cursor: Cursor(strconv.FormatInt(rev-1, 10))}) {
						cancel()
						return nil
					}
					break
				}
				if resp.Err() != nil {
					break
				}
				b.reset()
				for _, ev := range resp.Events {
					rev = ev.Kv.ModRevision + 1
					m, ok := msg(strings.TrimPrefix(string(ev.Kv.Key), prefix))
					if !ok {
						continue
					}
					m.Value = ev.Kv.Value
					m.Cursor = Cursor(strconv.FormatInt(ev.Kv.ModRevision, 10))
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
			if !b.wait(ctx) {
				return nil
			}
		}
	}), nil
}
