package shareddata

import (
	"context"
	"fmt"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxPushAttempts bounds the retries of a state push whose cached indices were stale (another
// client pushed to the same queue in between).
const maxPushAttempts = 16

func (s *etcdStore) StatePush(ctx context.Context, consumer string, capacity int, value []byte) ([][]byte, error) {
	if err := validNames("consumer", consumer); err != nil {
		return nil, err
	}
	if err := validCapacity(capacity); err != nil {
		return nil, err
	}
	headKey, tailKey := etcdStateHead(consumer), etcdStateTail(consumer)
	s.mu.Lock()
	h, known := s.hints[consumer]
	s.mu.Unlock()
	for attempt := 0; attempt < maxPushAttempts; attempt++ {
		if !known {
			var err error
			if h, err = s.readIndices(ctx, consumer, readOptions{}); err != nil {
				return nil, err
			}
		}
		head := h.head + 1
		tail := max(h.tail, head-int64(capacity))
		// Guarded by the head key's revision: the txn applies only to the indices it was
		// computed from. It writes the entry and both indices, drops the entries that fell
		// off the tail in one range delete, and reads the queue back, all in one revision.
		then := []clientv3.Op{
			clientv3.OpPut(etcdStateEntry(consumer, h.head), string(value)),
			clientv3.OpPut(headKey, strconv.FormatInt(head, 10)),
			clientv3.OpPut(tailKey, strconv.FormatInt(tail, 10)),
		}
		if tail > h.tail {
			then = append(then, clientv3.OpDelete(etcdStateEntry(consumer, h.tail), clientv3.WithRange(etcdStateEntry(consumer, tail))))
		}
		then = append(then, clientv3.OpGet(etcdStateQueue(consumer), clientv3.WithPrefix()))
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(headKey), "=", h.rev)).
			Then(then...).
			Else(clientv3.OpGet(headKey), clientv3.OpGet(tailKey)).
			Commit()
		if err != nil {
			s.forget(consumer)
			return nil, err
		}
		if !resp.Succeeded {
			if h, err = indicesFrom(consumer, resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseRange()); err != nil {
				return nil, err
			}
			known = true
			continue
		}
		s.mu.Lock()
		s.hints[consumer] = stateHint{head: head, tail: tail, rev: resp.Header.Revision}
		s.mu.Unlock()
		return values(resp.Responses[len(resp.Responses)-1].GetResponseRange()), nil
	}
	s.forget(consumer)
	return nil, fmt.Errorf("state push to %s: the queue changed under %d attempts (is another client pushing to it?)", consumer, maxPushAttempts)
}

func (s *etcdStore) forget(consumer string) {
	s.mu.Lock()
	delete(s.hints, consumer)
	s.mu.Unlock()
}

// values are a range's values in key order (a queue's entries, oldest first).
func values(r *pb.RangeResponse) [][]byte {
	out := make([][]byte, 0, len(r.GetKvs()))
	for _, kv := range r.GetKvs() {
		out = append(out, kv.Value)
	}
	return out
}

// indicesFrom reads a queue's indices from the ranges of its head and tail keys; an absent
// head is an empty queue at 0 (revision 0 is what a compare on an absent key sees).
func indicesFrom(consumer string, head, tail *pb.RangeResponse) (stateHint, error) {
	var h stateHint
	var err error
	if kvs := head.GetKvs(); len(kvs) > 0 {
		h.rev = kvs[0].ModRevision
		if h.head, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
			return h, fmt.Errorf("state queue %s: head %q is not an index", consumer, kvs[0].Value)
		}
	}
	if kvs := tail.GetKvs(); len(kvs) > 0 {
		if h.tail, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
			return h, fmt.Errorf("state queue %s: tail %q is not an index", consumer, kvs[0].Value)
		}
	}
	if h.tail > h.head || h.tail < 0 {
		return h, fmt.Errorf("state queue %s: tail %d beyond head %d", consumer, h.tail, h.head)
	}
	return h, nil
}

func (s *etcdStore) readIndices(ctx context.Context, consumer string, o readOptions) (stateHint, error) {
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(etcdStateHead(consumer), getOpts(o)...),
		clientv3.OpGet(etcdStateTail(consumer), getOpts(o)...)).Commit()
	if err != nil {
		return stateHint{}, err
	}
	return indicesFrom(consumer, resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseRange())
}

func (s *etcdStore) StateRead(ctx context.Context, consumer string, opts ...ReadOption) ([][]byte, error) {
	if err := validNames("consumer", consumer); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, etcdStateQueue(consumer), getOpts(readOpts(opts), clientv3.WithPrefix())...)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, kv.Value)
	}
	return out, nil
}

func (s *etcdStore) StateIndices(ctx context.Context, consumer string, opts ...ReadOption) (int64, int64, error) {
	if err := validNames("consumer", consumer); err != nil {
		return 0, 0, err
	}
	h, err := s.readIndices(ctx, consumer, readOpts(opts))
	return h.head, h.tail, err
}

func (s *etcdStore) StateClear(ctx context.Context, consumer string) error {
	if err := validNames("consumer", consumer); err != nil {
		return err
	}
	s.forget(consumer)
	_, err := s.cli.Delete(ctx, etcdStatePrefix(consumer), clientv3.WithPrefix())
	return err
}

func checkIndex(consumer string, index int64) error {
	if err := validNames("consumer", consumer); err != nil {
		return err
	}
	if index < 0 {
		return fmt.Errorf("state index %d: must be >= 0", index)
	}
	return nil
}

func (s *etcdStore) StatePut(ctx context.Context, consumer string, index int64, value []byte) error {
	if err := checkIndex(consumer, index); err != nil {
		return err
	}
	_, err := s.cli.Put(ctx, etcdStateEntry(consumer, index), string(value))
	return err
}

func (s *etcdStore) StateDelete(ctx context.Context, consumer string, index int64) error {
	if err := checkIndex(consumer, index); err != nil {
		return err
	}
	_, err := s.cli.Delete(ctx, etcdStateEntry(consumer, index))
	return err
}

func (s *etcdStore) StateSetIndices(ctx context.Context, consumer string, head, tail int64) error {
	if err := checkIndex(consumer, tail); err != nil {
		return err
	}
	if head < tail {
		return fmt.Errorf("state indices: head %d below tail %d", head, tail)
	}
	s.forget(consumer)
	_, err := s.cli.Txn(ctx).Then(
		clientv3.OpPut(etcdStateHead(consumer), strconv.FormatInt(head, 10)),
		clientv3.OpPut(etcdStateTail(consumer), strconv.FormatInt(tail, 10))).Commit()
	return err
}
