package mvcc

import (
	"bytes"
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Watch errors, with etcd's messages.
var (
	ErrEmptyWatcherRange = errors.New("mvcc: watcher range is empty")
)

// ringRevs is how many recent revisions' events the hub keeps in memory at most, and ringBytes
// how many bytes of their keys and values: watchers further behind read Pebble. The byte bound
// matters with large values: 8192 revisions of 100 kB metrics (PACE's Wave class) pinned ~700 MiB
// per member, where etcd's watchable store keeps no such history.
const (
	ringRevs  = 8192
	ringBytes = 32 << 20
)

// watchHub keeps the events of recent revisions for watchers. Watchers pull: a watcher knows the
// next revision it needs and reads events up to the visible revision, from the ring when they are
// recent and from Pebble's revision records otherwise. Pulling means a slow watcher never blocks
// writers or other watchers and never needs an unbounded queue; catching up after a start
// revision in the past is the same code path as following live.
//
// Invariant: the ring holds exactly the revisions first..last (slots outside are nil with size
// 0), bytes is the sum of their sizes, and it exceeds ringBytes only when last is the one
// revision held (the newest revision is always kept).
type watchHub struct {
	s     *Store
	mu    sync.RWMutex
	first int64            // oldest revision in the ring (0: empty)
	last  int64            // newest revision in the ring
	ring  [][]mvccpb.Event // revision r at ring[r % ringRevs]
	size  []int            // the bytes of ring[i]'s keys and values
	bytes int              // the sum of size
}

func newWatchHub(s *Store) *watchHub { return &watchHub{s: s} }

// notify records the events of a newly visible revision (called under pubMu, in order).
func (h *watchHub) notify(rev int64, evs []mvccpb.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ring == nil {
		h.ring, h.size = make([][]mvccpb.Event, ringRevs), make([]int, ringRevs)
	}
	if h.first != 0 && rev != h.last+1 {
		for h.first <= h.last { // not contiguous: start over
			h.evictFirst()
		}
		h.first = 0
	}
	if h.first == 0 {
		h.first = rev
	} else if rev-h.first+1 > ringRevs {
		h.evictFirst() // its slot is the one rev takes
	}
	n := 0
	for i := range evs {
		if evs[i].Kv != nil {
			n += len(evs[i].Kv.Key) + len(evs[i].Kv.Value)
		}
		if evs[i].PrevKv != nil {
			n += len(evs[i].PrevKv.Key) + len(evs[i].PrevKv.Value)
		}
	}
	h.ring[rev%ringRevs], h.size[rev%ringRevs] = evs, n
	h.bytes += n
	h.last = rev
	for h.bytes > ringBytes && h.first < h.last {
		h.evictFirst()
	}
}

// evictFirst drops the oldest revision held (h.mu held for writing).
func (h *watchHub) evictFirst() {
	i := h.first % ringRevs
	h.bytes -= h.size[i]
	h.ring[i], h.size[i] = nil, 0
	h.first++
}

func (h *watchHub) close() {}

// Changed returns a channel closed when the visible revision next advances.
func (s *Store) Changed() <-chan struct{} {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	return s.visibleCh
}

// WatchSpec says what a watcher watches.
type WatchSpec struct {
	Key []byte
	// End: nil watches Key alone; empty (non-nil) watches every key >= Key; else [Key, End).
	End []byte
	// StartRev is the first revision to report (0: the next one).
	StartRev int64
	PrevKV   bool
	NoPut    bool
	NoDelete bool
}

// Watcher follows the events of one key range. It is not safe for concurrent use; one stream's
// goroutine drives it.
type Watcher struct {
	s    *Store
	spec WatchSpec
	next int64
}

// NewWatcher starts a watcher. A start revision below the compaction revision is reported by the
// first Next.
func (s *Store) NewWatcher(spec WatchSpec) (*Watcher, error) {
	if len(spec.End) != 0 && bytes.Compare(spec.Key, spec.End) >= 0 {
		return nil, ErrEmptyWatcherRange
	}
	w := &Watcher{s: s, spec: spec, next: spec.StartRev}
	if w.next <= 0 {
		w.next = s.visible.Load() + 1
	}
	return w, nil
}

// NextRev is the next revision the watcher will report.
func (w *Watcher) NextRev() int64 { return w.next }

func (w *Watcher) matches(ev *mvccpb.Event) bool {
	if (ev.Type == mvccpb.PUT && w.spec.NoPut) || (ev.Type == mvccpb.DELETE && w.spec.NoDelete) {
		return false
	}
	k := ev.Kv.Key
	switch {
	case w.spec.End == nil:
		return bytes.Equal(k, w.spec.Key)
	case len(w.spec.End) == 0:
		return bytes.Compare(k, w.spec.Key) >= 0
	default:
		return bytes.Compare(k, w.spec.Key) >= 0 && bytes.Compare(k, w.spec.End) < 0
	}
}

// Next returns the watcher's events of at most maxRevs revisions starting at its next revision
// and not beyond the visible one, in revision order and never splitting a revision, and advances
// the watcher past them. compactRev != 0 means the watcher's next revision has been compacted:
// the watcher is done.
func (w *Watcher) Next(maxRevs int) (evs []mvccpb.Event, compactRev int64, err error) {
	s := w.s
	to := s.visible.Load()
	if w.next > to {
		return nil, 0, nil
	}
	if c := s.compactRev.Load(); w.next < c {
		return nil, c, nil
	}
	if to-w.next+1 > int64(maxRevs) {
		to = w.next + int64(maxRevs) - 1
	}
	h := s.watch
	h.mu.RLock()
	if h.first != 0 && w.next >= h.first && to <= h.last {
		for rev := w.next; rev <= to; rev++ {
			for _, ev := range h.ring[rev%ringRevs] {
				if w.matches(&ev) {
					evs = append(evs, ev)
				}
			}
		}
		h.mu.RUnlock()
	} else {
		h.mu.RUnlock()
		evs, err = w.fromDisk(w.next, to)
		if err != nil {
			return nil, 0, err
		}
		if c := s.compactRev.Load(); w.next < c {
			return nil, c, nil // compacted while reading
		}
	}
	w.next = to + 1
	if w.spec.PrevKV {
		for i := range evs {
			w.addPrev(&evs[i])
		}
	}
	return evs, 0, nil
}

func (w *Watcher) fromDisk(from, to int64) ([]mvccpb.Event, error) {
	it, err := w.s.db.NewIter(&pebble.IterOptions{LowerBound: revKey(nil, from, 0), UpperBound: revKey(nil, to+1, 0)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var evs []mvccpb.Event
	for it.First(); it.Valid(); it.Next() {
		if isChangeKey(it.Key()) {
			continue
		}
		kind, kv, _, err := decodeRecord(it.Value())
		if err != nil {
			return nil, err
		}
		if kind == recDeleteAbsent {
			continue
		}
		ev := mvccpb.Event{Type: mvccpb.PUT, Kv: &kv}
		if kind == recDelete {
			ev.Type = mvccpb.DELETE
		}
		if w.matches(&ev) {
			evs = append(evs, ev)
		}
	}
	return evs, it.Error()
}

// addPrev sets the version before the event (not for creations), if still kept.
func (w *Watcher) addPrev(ev *mvccpb.Event) {
	if ev.Type == mvccpb.PUT && ev.Kv.CreateRevision == ev.Kv.ModRevision {
		return
	}
	e, ok := w.s.ix.get(ev.Kv.Key, ev.Kv.ModRevision-1)
	if !ok {
		return
	}
	var prev mvccpb.KeyValue
	if err := w.s.readRecord(e.rev, &prev); err == nil {
		ev.PrevKv = &prev
	}
}
