package mvcc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// MaxLeaseTTL is etcd's largest lease TTL in seconds.
const MaxLeaseTTL = 9000000000

// lessor keeps leases and the keys attached to them, as etcd's lease package. Leases are stored
// (id -> granted TTL); expiry times are not: after a restart every lease gets its full TTL again,
// as in etcd. Attached keys are rebuilt from the index (each version records its lease).
type lessor struct {
	s      *Store
	mu     sync.Mutex
	leases map[int64]*lease
}

type lease struct {
	id     int64
	ttl    int64 // granted TTL, seconds
	expiry time.Time
	keys   map[string]struct{}
}

// LeaseInfo describes a lease for TimeToLive.
type LeaseInfo struct {
	ID         int64
	TTL        int64 // remaining seconds
	GrantedTTL int64
	Keys       [][]byte
}

func newLessor(s *Store) *lessor { return &lessor{s: s, leases: map[int64]*lease{}} }

func (l *lessor) now() time.Time { return l.s.cfg.Now() }

func (l *lessor) recover() error {
	it, err := l.s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixLease}, UpperBound: []byte{prefixLease + 1}})
	if err != nil {
		return err
	}
	now := l.now()
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 9 || len(v) != 8 {
			continue
		}
		id := int64(binary.BigEndian.Uint64(k[1:]))
		ttl := int64(binary.BigEndian.Uint64(v))
		l.leases[id] = &lease{id: id, ttl: ttl, expiry: now.Add(time.Duration(ttl) * time.Second), keys: map[string]struct{}{}}
	}
	if err := it.Close(); err != nil {
		return err
	}
	l.s.ix.visit([]byte{0}, []byte{}, l.s.lastRev.Load(), func(k []byte, e entry) bool {
		if ls, ok := l.leases[e.lease]; ok && e.lease != 0 {
			ls.keys[string(k)] = struct{}{}
		}
		return true
	})
	return nil
}

// run revokes expired leases (etcd checks every 500 ms) until the store closes.
func (l *lessor) run() {
	defer l.s.bg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.s.closing:
			return
		case <-t.C:
		}
		for _, id := range l.expired() {
			err := l.s.LeaseRevoke(context.Background(), id)
			if err != nil && !errors.Is(err, ErrLeaseNotFound) {
				l.s.log.Warn("revoke expired lease", "lease", id, "err", err)
			}
		}
	}
}

func (l *lessor) expired() []int64 {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []int64
	for id, ls := range l.leases {
		if !now.Before(ls.expiry) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (l *lessor) exists(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.leases[id]
	return ok
}

func (l *lessor) attach(id int64, key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		ls.keys[string(key)] = struct{}{}
	}
}

func (l *lessor) detach(id int64, key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		delete(ls.keys, string(key))
	}
}

// LeaseGrant creates a lease with the given id (0: pick one) and TTL in seconds (raised to the
// minimum TTL), and returns the id and the TTL granted. It does not change the revision.
func (s *Store) LeaseGrant(ctx context.Context, id, ttl int64) (int64, int64, error) {
	if err := s.checkSpace(64); err != nil {
		return 0, 0, err
	}
	if ttl > MaxLeaseTTL {
		return 0, 0, ErrLeaseTTLTooBig
	}
	if min := int64(math.Ceil(s.cfg.MinLeaseTTL.Seconds())); ttl < min {
		ttl = min
	}
	l := s.leases
	_, err := s.write(ctx, func(w *writeTxn) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if id == 0 {
			var b [8]byte
			for {
				if _, err := rand.Read(b[:]); err != nil {
					return err
				}
				id = int64(binary.BigEndian.Uint64(b[:]) >> 1)
				if _, taken := l.leases[id]; id != 0 && !taken {
					break
				}
			}
		} else if _, ok := l.leases[id]; ok {
			return ErrLeaseExists
		}
		l.leases[id] = &lease{id: id, ttl: ttl, expiry: l.now().Add(time.Duration(ttl) * time.Second), keys: map[string]struct{}{}}
		w.sideWrite(leaseKey(id), u64(uint64(ttl)))
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return id, ttl, nil
}

// LeaseRevoke deletes a lease and, in one revision, every key attached to it (one delete event
// per key).
func (s *Store) LeaseRevoke(ctx context.Context, id int64) error {
	l := s.leases
	_, err := s.write(ctx, func(w *writeTxn) error {
		l.mu.Lock()
		ls, ok := l.leases[id]
		var keys []string
		if ok {
			for k := range ls.keys {
				keys = append(keys, k)
			}
			delete(l.leases, id)
		}
		l.mu.Unlock()
		if !ok {
			return ErrLeaseNotFound
		}
		sort.Strings(keys)
		for _, k := range keys {
			if e, live := s.ix.get([]byte(k), w.rev); live && e.lease == id {
				w.tombstone([]byte(k), 0)
			}
		}
		w.sideDelete(leaseKey(id))
		return nil
	})
	return err
}

// LeaseKeepAlive renews a lease to its full TTL and returns the TTL.
func (s *Store) LeaseKeepAlive(id int64) (int64, error) {
	l := s.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return 0, ErrLeaseNotFound
	}
	ls.expiry = l.now().Add(time.Duration(ls.ttl) * time.Second)
	return ls.ttl, nil
}

// LeaseTimeToLive describes a lease; withKeys lists its keys in key order.
func (s *Store) LeaseTimeToLive(id int64, withKeys bool) (LeaseInfo, error) {
	l := s.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return LeaseInfo{ID: id, TTL: -1}, ErrLeaseNotFound
	}
	info := LeaseInfo{ID: id, GrantedTTL: ls.ttl, TTL: int64(ls.expiry.Sub(l.now()).Seconds())}
	if info.TTL < 0 {
		info.TTL = 0
	}
	if withKeys {
		for k := range ls.keys {
			info.Keys = append(info.Keys, []byte(k))
		}
		sort.Slice(info.Keys, func(i, j int) bool { return bytes.Compare(info.Keys[i], info.Keys[j]) < 0 })
	}
	return info, nil
}

// Leases lists the lease ids in ascending order.
func (s *Store) Leases() []int64 {
	l := s.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, 0, len(l.leases))
	for id := range l.leases {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// RevokeLeasesOf deletes, in one revision, every live key attached to a lease of member origin,
// that is every key whose latest version origin wrote with a lease (a member attaches only the
// leases it granted itself). It is for a member removed from the cluster: nobody can keep its
// leases alive or expire them any more, so their keys go as if the leases had expired. Each
// member that learns of the removal does it; the deletions are ordinary changes, and duplicates
// from several members converge by last writer wins. It returns the number of keys deleted.
func (s *Store) RevokeLeasesOf(ctx context.Context, origin uint64) (int, error) {
	if origin == s.member {
		return 0, fmt.Errorf("revoke leases of member %x: that is this member, whose leases it manages itself", origin)
	}
	n := 0
	_, err := s.write(ctx, func(w *writeTxn) error {
		// Inside the writer: no other write changes the index meanwhile.
		var keys [][]byte
		s.ix.ascendLatest(func(key []byte, st Stamp, e entry, has bool) bool {
			if st.Origin == origin && has && !e.tomb && e.lease != 0 {
				keys = append(keys, key)
			}
			return true
		})
		for _, k := range keys {
			w.tombstone(k, 0)
		}
		n = len(keys)
		return nil
	})
	return n, err
}
