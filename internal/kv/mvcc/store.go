package mvcc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Store is a single member's MVCC key-value store. All methods are safe for concurrent use.
//
// Write path (commit.go): one writer goroutine evaluates queued write requests in order against
// the latest state (including earlier writes not yet durable), adds their versions to the index
// and hands one Pebble batch per group to Pebble's commit pipeline, so the WAL order is the
// revision order; a syncer goroutine waits for the group's fsync and only then publishes the
// revisions (visible to readers and watchers, in order) and acknowledges the requests, so that a
// reader never sees a write that a crash could still lose.
//
// Read path: readers never wait for writers. They read at the visible revision through the index
// (versions above it are ignored) and Pebble (revision records are immutable until compacted).
type Store struct {
	cfg    Config
	log    *slog.Logger
	db     *pebble.DB
	ix     *index
	clock  *Clock
	member uint64

	writeMu sync.Mutex    // held by the writer while it evaluates a group
	seq     uint64        // guarded by writeMu: this member's last change sequence
	vv      VersionVector // guarded by writeMu: the last sequence applied per origin

	vvMu      sync.Mutex
	durableVV VersionVector // guarded by vvMu: vv as of the last durable commit group
	stableVV  VersionVector // guarded by vvMu: what every member of the cluster holds (SetStable)
	// The frontier of this member's own changes (see Frontier), guarded by frontierMu:
	// pendingOwn own changes are evaluated but not yet visible; pubSeq and pubWall are the
	// sequence and the highest stamp wall time of the own changes already visible.
	frontierMu sync.Mutex
	pendingOwn int
	pubSeq     uint64
	pubWall    int64
	// collectBefore: deletions stamped before this wall time may be forgotten (SetCollectBefore).
	collectBefore atomic.Int64
	lastRev       atomic.Int64 // latest assigned revision; written under writeMu
	failed        error        // guarded by writeMu: a Pebble write failed; the store refuses writes

	visible    atomic.Int64 // every revision <= visible is durable and published
	compactRev atomic.Int64 // reads below this revision fail with ErrCompacted

	pubMu     sync.Mutex
	ready     map[int64][]mvccpb.Event // durable revisions waiting for an earlier one
	visibleCh chan struct{}            // closed when visible advances

	compactMu   sync.Mutex // serialises compactions
	compactDone chan struct{}

	watch     *watchHub
	leases    *lessor
	conflicts *conflictLog // peers' ops that lost here (conflict.go)
	alarm     atomic.Bool  // NOSPACE raised
	logical   atomic.Int64 // bytes of revision records and change headers: what the quota limits

	writeCh chan *writeReq
	syncCh  chan *commitGroup

	closeOnce sync.Once
	closing   chan struct{}
	bg        sync.WaitGroup
}

// Open opens (or creates) the store in cfg.Dir and recovers its state.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	cfg.Now = now
	cache := pebble.NewCache(cfg.CacheBytes)
	defer cache.Unref()
	opts := &pebble.Options{
		Cache: cache,
		// Small memtables: Pebble preallocates every WAL file to 110% of the memtable size and
		// keeps a WAL until its memtable is flushed, so 64 MiB memtables cost hundreds of MiB of
		// disk on a small store. 4 MiB costs no measurable write throughput here.
		MemTableSize:       4 << 20,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{log},
	}
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open pebble %q: %w", cfg.Dir, err)
	}
	s := &Store{
		cfg:       cfg,
		log:       log,
		db:        db,
		ix:        newIndex(),
		vv:        VersionVector{},
		durableVV: VersionVector{},
		clock:     NewClock(func() int64 { return now().UnixNano() }),
		conflicts: newConflictLog(cfg.ConflictLogSize),
		ready:     map[int64][]mvccpb.Event{},
		visibleCh: make(chan struct{}),
		closing:   make(chan struct{}),
		writeCh:   make(chan *writeReq, maxGroup),
		syncCh:    make(chan *commitGroup, 4),
	}
	s.ix.retainStamps = cfg.Replicated
	s.watch = newWatchHub(s)
	s.leases = newLessor(s)
	if err := s.recover(); err != nil {
		db.Close()
		return nil, err
	}
	s.bg.Add(3)
	go s.leases.run()
	go s.runWriter()
	go s.runSyncer()
	return s, nil
}

// recover migrates an older key layout, loads the member id, rebuilds the index from the revision
// records, restores the revision, sequence and clock from the last change, and finishes an
// interrupted compaction.
func (s *Store) recover() error {
	if err := s.migrate(); err != nil {
		return err
	}
	v, closer, err := s.db.Get(metaMember)
	switch {
	case err == nil:
		s.member = binary.BigEndian.Uint64(v)
		closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
		var b [8]byte
		for s.member == 0 {
			if _, err := rand.Read(b[:]); err != nil {
				return err
			}
			s.member = binary.BigEndian.Uint64(b[:])
		}
		if err := s.db.Set(metaMember, b[:], pebble.Sync); err != nil {
			return fmt.Errorf("write member id: %w", err)
		}
	default:
		return fmt.Errorf("read member id: %w", err)
	}

	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRev}, UpperBound: []byte{prefixRev + 1}})
	if err != nil {
		return err
	}
	maxRecordRev := int64(1)
	for it.First(); it.Valid(); it.Next() {
		if isChangeKey(it.Key()) {
			s.logical.Add(int64(len(it.Key()) + len(it.Value())))
			continue
		}
		rev, sub, ok := parseRevKey(it.Key())
		if !ok {
			continue
		}
		maxRecordRev = max(maxRecordRev, rev)
		kind, kv, st, err := decodeRecord(it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("revision record %d/%d: %w", rev, sub, err)
		}
		s.logical.Add(int64(len(it.Key()) + len(it.Value())))
		if kind == recDeleteAbsent {
			s.ix.observeDeletion(kv.Key, st)
			s.clock.Observe(st.Time)
			continue
		}
		e := entry{rev: revision{rev, sub}, create: kv.CreateRevision, version: kv.Version, lease: kv.Lease, tomb: kind == recDelete}
		s.ix.addLocked(kv.Key, e, st)
		s.clock.Observe(st.Time)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := s.recoverReplicaState(); err != nil {
		return err
	}

	// As etcd, an empty store is at revision 1, so the first write gets revision 2.
	s.lastRev.Store(1)
	s.visible.Store(1)
	if c, ok, err := s.lastChange(); err != nil {
		return err
	} else if ok {
		s.lastRev.Store(c.Revision)
		s.visible.Store(c.Revision)
		s.clock.Observe(c.Time)
	}
	// A snapshot's merge takes revisions without change headers (snapshot.go): the latest
	// revision is the highest of both.
	if maxRecordRev > s.lastRev.Load() {
		s.lastRev.Store(maxRecordRev)
		s.visible.Store(maxRecordRev)
	}

	sched, err := s.metaInt(metaCompactSched)
	if err != nil {
		return err
	}
	if sched > 0 {
		s.compactRev.Store(sched)
		s.compactIndex(sched, nil)
		finished, err := s.metaInt(metaCompactFinished)
		if err != nil {
			return err
		}
		if finished < sched {
			s.compactDone = make(chan struct{})
			s.bg.Add(1)
			go s.compactBackend(sched, s.compactDone)
		}
	}
	if err := s.leases.recover(); err != nil {
		return err
	}
	s.checkQuota()
	return nil
}

func (s *Store) metaInt(key []byte) (int64, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	return int64(binary.BigEndian.Uint64(v)), nil
}

// Close stops background work and closes the database. Requests in flight may fail.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		s.bg.Wait()
		s.watch.close()
		s.writeMu.Lock()
		s.failed = ErrClosed
		s.writeMu.Unlock()
		err = s.db.Close()
	})
	return err
}

// MemberID is this member's id: the origin of its changes.
func (s *Store) MemberID() uint64 { return s.member }

// Rev is the current revision: the latest durable, visible revision.
func (s *Store) Rev() int64 { return s.visible.Load() }

// CompactRev is the revision of the last compaction (0: none).
func (s *Store) CompactRev() int64 { return s.compactRev.Load() }

// DBSize returns Pebble's disk usage (including files already obsolete, which Pebble deletes
// at a paced rate) and the part held by live files (WAL, tables, blob files).
func (s *Store) DBSize() (total, inUse int64) {
	m := s.db.Metrics()
	total = int64(m.DiskSpaceUsage())
	inUse = int64(m.WAL.PhysicalSize + m.Table.Local.LiveSize + m.BlobFiles.Local.LiveSize)
	return total, min(inUse, total)
}

// lastChange reads the newest change header: the r-space's last 9-byte key, found by stepping
// back over the revision records of the newest revisions (a snapshot merge writes records
// without a header).
func (s *Store) lastChange() (Change, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRev}, UpperBound: []byte{prefixRev + 1}})
	if err != nil {
		return Change{}, false, err
	}
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		if isChangeKey(it.Key()) {
			c, _, err := decodeHeader(it.Value())
			return c, err == nil, err
		}
	}
	return Change{}, false, it.Error()
}

// StorageIO is what the storage engine has written since the store was opened: the bytes
// logged (WAL), the bytes of tables flushed from memtables, and the bytes compactions rewrote.
// Write amplification, as Pebble defines it, is (WAL + Flushed + Compacted) / WAL: a store
// whose compactions rewrite old data with every new file shows it as a large ratio.
type StorageIO struct {
	WALBytes       uint64
	FlushedBytes   uint64
	CompactedBytes uint64
	// Compactions counts the compactions run.
	Compactions int64
}

// WriteAmp is (WAL + Flushed + Compacted) / WAL (0 before anything was written).
func (io StorageIO) WriteAmp() float64 {
	if io.WALBytes == 0 {
		return 0
	}
	return float64(io.WALBytes+io.FlushedBytes+io.CompactedBytes) / float64(io.WALBytes)
}

// StorageIO reads the storage engine's write counters.
func (s *Store) StorageIO() StorageIO {
	m := s.db.Metrics()
	io := StorageIO{WALBytes: m.WAL.BytesWritten, Compactions: m.Compact.Count}
	for i := range m.Levels {
		io.FlushedBytes += m.Levels[i].TableBytesFlushed + m.Levels[i].BlobBytesFlushed
		io.CompactedBytes += m.Levels[i].TableBytesCompacted + m.Levels[i].BlobBytesCompacted
	}
	return io
}

// KeyCount is the number of keys in the index (including keys kept only for their history).
func (s *Store) KeyCount() int { return s.ix.keyCount() }

// waitVisible blocks until revision rev is visible.
func (s *Store) waitVisible(ctx context.Context, rev int64) error {
	for {
		if s.visible.Load() >= rev {
			return nil
		}
		s.pubMu.Lock()
		if s.visible.Load() >= rev {
			s.pubMu.Unlock()
			return nil
		}
		ch := s.visibleCh
		s.pubMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return ErrClosed
		}
	}
}

// publish marks revision rev durable and publishes it and every durable revision after it that
// waited for it, in order: the visible revision only ever advances over a gap-free prefix.
func (s *Store) publish(rev int64, evs []mvccpb.Event) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.ready[rev] = evs
	advanced := false
	for {
		next := s.visible.Load() + 1
		evs, ok := s.ready[next]
		if !ok {
			break
		}
		delete(s.ready, next)
		s.visible.Store(next)
		s.watch.notify(next, evs)
		advanced = true
	}
	if advanced {
		close(s.visibleCh)
		s.visibleCh = make(chan struct{})
	}
}

// readRecord reads the revision record at r.
func (s *Store) readRecord(r revision, kv *mvccpb.KeyValue) error {
	var kb [17]byte
	v, closer, err := s.db.Get(revKey(kb[:0], r.main, r.sub))
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) && r.main <= s.compactRev.Load() {
			return ErrCompacted // compacted after the reader checked its revision
		}
		return fmt.Errorf("read revision %d/%d: %w", r.main, r.sub, err)
	}
	defer closer.Close()
	_, *kv, _, err = decodeRecord(v)
	if err != nil {
		return fmt.Errorf("revision %d/%d: %w", r.main, r.sub, err)
	}
	return nil
}

// A revision record is a kind byte, for stamped kinds the version's LWW stamp, then the
// mvccpb.KeyValue. Stores written before replication hold the unstamped kinds ('p', 'd'), whose
// versions read back with the zero stamp, which every stamped version wins over.
func decodeRecord(v []byte) (kind byte, kv mvccpb.KeyValue, st Stamp, err error) {
	if len(v) < 1 {
		return 0, kv, st, errors.New("empty record")
	}
	body := v[1:]
	switch v[0] {
	case recPut, recDelete:
		kind = v[0]
	case recPutStamped, recDeleteStamped, recDeleteAbsent:
		if len(body) < stampLen {
			return 0, kv, st, errors.New("short stamped record")
		}
		st = decodeStamp(body)
		body = body[stampLen:]
		kind = map[byte]byte{recPutStamped: recPut, recDeleteStamped: recDelete, recDeleteAbsent: recDeleteAbsent}[v[0]]
	default:
		return 0, kv, st, fmt.Errorf("bad record type %q", v[0])
	}
	err = kv.Unmarshal(body)
	return kind, kv, st, err
}

func encodeRecord(kind byte, kv *mvccpb.KeyValue, st Stamp) []byte {
	b := make([]byte, 1+stampLen+kv.Size())
	switch kind {
	case recPut:
		b[0] = recPutStamped
	case recDelete:
		b[0] = recDeleteStamped
	default:
		b[0] = kind
	}
	encodeStamp(b[1:], st)
	_, _ = kv.MarshalToSizedBuffer(b[1+stampLen:])
	return b
}

type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	panic("pebble: " + fmt.Sprintf(format, args...))
}

// Checkpoint writes a consistent point-in-time copy of the store into dir, which must not exist
// (a Pebble checkpoint: files are hard-linked where the file system allows, else copied). The
// copy holds this member's id; RestoredCopy gives a restored copy an id of its own.
func (s *Store) Checkpoint(dir string) error {
	return s.db.Checkpoint(dir, pebble.WithFlushedWAL())
}

// RestoredCopy prepares the store in dir, restored from another member's checkpoint, to be
// opened as a member of its own: it drops the copied member id, so the next Open picks a new one
// (two members with one id would hand out the same change ids).
func RestoredCopy(dir string) error {
	quiet := pebbleLogger{slog.New(slog.NewTextHandler(io.Discard, nil))}
	// vfs.Default, not Pebble's default disk-health-checking wrapper, whose goroutines a failed
	// Open (a snapshot that is not a store) would leave behind.
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quiet, FS: vfs.Default})
	if err != nil {
		return fmt.Errorf("open restored store %q: %w", dir, err)
	}
	if err := db.Delete(metaMember, pebble.Sync); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}
