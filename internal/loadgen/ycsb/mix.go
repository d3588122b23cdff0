package ycsb

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/continuum-project/continuum/internal/loadgen"
)

// DB is what the workload needs of a store (YCSB's DB binding, without field names: a record
// is one value). Implementations are called from many goroutines at once, honour ctx, and
// return errors that loadgen.ClassifyError can type (a read of a missing key is an error).
type DB interface {
	Read(ctx context.Context, key string) error
	// Scan reads count records in key order starting at startKey.
	Scan(ctx context.Context, startKey string, count int) error
	Update(ctx context.Context, key, value string) error
	Insert(ctx context.Context, key, value string) error
	// ReadModifyWrite reads key, then writes value to it.
	ReadModifyWrite(ctx context.Context, key, value string) error
}

// valuePoolBytes is the size of the random text values are cut from: drawing an offset per
// request is cheaper than drawing every byte, and keeps values from repeating exactly.
const valuePoolBytes = 64 << 10

func newValuePool(rng *rand.Rand, size int) string {
	b := make([]byte, max(valuePoolBytes, 2*size))
	for i := range b {
		b[i] = byte(' ' + rng.IntN(95)) // printable ASCII, as YCSB's RandomByteIterator
	}
	return string(b)
}

// runMix is the run phase as a loadgen.Mix. Everything drawn at Next comes from rng under mu,
// so the open-loop sequence (one scheduler) is the same for a seed; an insert's key number is
// taken when it is sent, so an insert that is never sent cannot stall the acknowledged counter.
type runMix struct {
	w     Workload
	db    DB
	ops   []string
	index [numOps]int // operation -> index into ops

	mu       sync.Mutex
	rng      *rand.Rand
	choose   opChooser
	zipf     *scrambledZipfian // requestdistribution=zipfian
	latest   *zipfian          // requestdistribution=latest
	scanZipf *zipfian          // scanlengthdistribution=zipfian
	inserts  *ackCounter
	left     int64 // operations left; -1: unbounded
	pool     string
}

// newRunMix builds the run phase; expectedOps sizes the zipfian key range (YCSB: recordcount
// plus twice the expected inserts) when OperationCount is 0.
func newRunMix(w Workload, db DB, seed int64, expectedOps int64) *runMix {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x79637362))
	m := &runMix{w: w, db: db, ops: w.Ops(), rng: rng, inserts: newAckCounter(w.RecordCount), left: -1}
	if w.OperationCount > 0 {
		m.left = w.OperationCount
		expectedOps = w.OperationCount
	}
	for i, p := range w.proportions() {
		m.choose.add(i, p)
	}
	for i, name := range m.ops {
		for op, n := range opNames {
			if n == name {
				m.index[op] = i
			}
		}
	}
	switch w.RequestDistribution {
	case DistZipfian:
		newKeys := int64(float64(expectedOps) * w.InsertProportion / sumOf(w.proportions()) * 2)
		m.zipf = newScrambledZipfian(0, w.RecordCount+newKeys)
	case DistLatest:
		m.latest = newZipfian(0, w.RecordCount, zipfianConstant)
	}
	if w.ScanLengthDistribution == DistZipfian {
		m.scanZipf = newZipfian(int64(w.MinScanLength), int64(w.MaxScanLength-w.MinScanLength+1), zipfianConstant)
	}
	m.pool = newValuePool(rng, w.ValueSize())
	return m
}

func sumOf(p [numOps]float64) float64 {
	s := 0.0
	for _, v := range p {
		s += v
	}
	return s
}

func (m *runMix) Ops() []string { return m.ops }

// keynumLocked is YCSB's nextKeynum: a key whose insert has been acknowledged.
func (m *runMix) keynumLocked() int64 {
	last := m.inserts.last()
	switch {
	case m.latest != nil:
		if last < 1 {
			return 0
		}
		return last - m.latest.next(m.rng, last)
	case m.zipf != nil:
		for {
			if k := m.zipf.next(m.rng); k <= last {
				return k
			}
		}
	default:
		for {
			if k := m.rng.Int64N(m.w.RecordCount); k <= last {
				return k
			}
		}
	}
}

func (m *runMix) valueLocked() string {
	n := m.w.ValueSize()
	off := m.rng.IntN(len(m.pool) - n + 1)
	return m.pool[off : off+n]
}

func (m *runMix) scanLengthLocked() int {
	if m.scanZipf != nil {
		return int(m.scanZipf.next(m.rng, m.scanZipf.items))
	}
	return m.w.MinScanLength + m.rng.IntN(m.w.MaxScanLength-m.w.MinScanLength+1)
}

// Next implements loadgen.Mix.
func (m *runMix) Next() (int, loadgen.Target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.left == 0 {
		return 0, nil, false
	}
	if m.left > 0 {
		m.left--
	}
	op := m.choose.next(m.rng)
	idx := m.index[op]
	db := m.db
	switch op {
	case opRead:
		key := m.w.KeyName(m.keynumLocked())
		return idx, loadgen.TargetFunc(func(ctx context.Context) error { return db.Read(ctx, key) }), true
	case opUpdate:
		key, val := m.w.KeyName(m.keynumLocked()), m.valueLocked()
		return idx, loadgen.TargetFunc(func(ctx context.Context) error { return db.Update(ctx, key, val) }), true
	case opInsert:
		val := m.valueLocked()
		return idx, loadgen.TargetFunc(func(ctx context.Context) error {
			k := m.inserts.nextValue()
			defer m.inserts.acknowledge(k)
			return db.Insert(ctx, m.w.KeyName(k), val)
		}), true
	case opScan:
		key, n := m.w.KeyName(m.keynumLocked()), m.scanLengthLocked()
		return idx, loadgen.TargetFunc(func(ctx context.Context) error { return db.Scan(ctx, key, n) }), true
	default: // opRMW
		key, val := m.w.KeyName(m.keynumLocked()), m.valueLocked()
		return idx, loadgen.TargetFunc(func(ctx context.Context) error { return db.ReadModifyWrite(ctx, key, val) }), true
	}
}

// loadMix is the load phase: inserts of key numbers 0 .. RecordCount-1, in order.
type loadMix struct {
	w    Workload
	db   DB
	mu   sync.Mutex
	rng  *rand.Rand
	pool string
	next int64
}

func newLoadMix(w Workload, db DB, seed int64) *loadMix {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6c6f6164))
	return &loadMix{w: w, db: db, rng: rng, pool: newValuePool(rng, w.ValueSize())}
}

func (m *loadMix) Ops() []string { return []string{OpInsert} }

func (m *loadMix) Next() (int, loadgen.Target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= m.w.RecordCount {
		return 0, nil, false
	}
	key := m.w.KeyName(m.next)
	m.next++
	n := m.w.ValueSize()
	off := m.rng.IntN(len(m.pool) - n + 1)
	val := m.pool[off : off+n]
	db := m.db
	return 0, loadgen.TargetFunc(func(ctx context.Context) error { return db.Insert(ctx, key, val) }), true
}
