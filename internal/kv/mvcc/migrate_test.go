package mvcc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// toFormat1 rewrites a closed store's key layout to format 1, byte for byte what earlier
// builds wrote: change headers under 'c', the origin index under 'o', no format record.
func toFormat1(t *testing.T, dir string) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		switch {
		case isChangeKey(k):
			_ = b.Set(append([]byte{prefixChangeV1}, k[1:]...), it.Value(), nil)
			_ = b.Delete(k, nil)
			n++
		case k[0] == prefixOrigin:
			_ = b.Set(append([]byte{prefixOriginV1}, k[1:]...), it.Value(), nil)
			_ = b.Delete(k, nil)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	_ = b.Delete(metaFormat, nil)
	if n == 0 {
		t.Fatal("no change headers to rewrite")
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// storeState is what a store serves, for comparing one before and after a migration.
type storeState struct {
	Rev, CompactRev int64
	Hash            uint32
	VV              VersionVector
	Log             []Change
	KVs             []string
}

func stateOf(t *testing.T, s *Store) storeState {
	t.Helper()
	st := storeState{Rev: s.Rev(), CompactRev: s.CompactRev(), VV: s.VersionVector()}
	var err error
	if st.Hash, _, err = s.Hash(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadLog(st.CompactRev+1, 0, func(c *Change) bool { st.Log = append(st.Log, *c); return true }); err != nil {
		t.Fatal(err)
	}
	r, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range r.Kvs {
		st.KVs = append(st.KVs, fmt.Sprintf("%s=%s@%d/%d/v%d", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version))
	}
	return st
}

// A store written in format 1 opens with everything it held: data, history, change log,
// version vector; it is migrated in place and keeps working.
func TestMigrateFormat1(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, func(c *Config) { c.Dir = dir })
	for i := range 30 {
		put(t, s, fmt.Sprintf("k%02d", i%7), fmt.Sprint("v", i))
	}
	if _, err := s.Txn(context.Background(), &pb.TxnRequest{Success: []*pb.RequestOp{
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("t"), Value: []byte("x")}}},
		{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("k00")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background(), 10, true); err != nil {
		t.Fatal(err)
	}
	put(t, s, "after", "compaction")
	want := stateOf(t, s)
	if len(want.Log) < 20 {
		t.Fatalf("only %d changes in the log", len(want.Log))
	}
	s.Close()

	toFormat1(t, dir)
	s2 := openTest(t, func(c *Config) { c.Dir = dir })
	if got := stateOf(t, s2); !reflect.DeepEqual(got, want) {
		t.Fatalf("after migration:\n got %+v\nwant %+v", got, want)
	}
	if f, err := s2.metaInt(metaFormat); err != nil || f != storeFormat {
		t.Fatalf("format %d (%v), want %d", f, err, storeFormat)
	}
	it, err := s2.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.First(); it.Valid(); it.Next() {
		if k := it.Key(); k[0] == prefixChangeV1 || k[0] == prefixOriginV1 {
			t.Errorf("format-1 key %q left after migration", k)
		}
	}
	it.Close()
	// The sequence and revision continue.
	rev := put(t, s2, "new", "1")
	var last Change
	_, _ = s2.ReadLog(rev, 0, func(c *Change) bool { last = *c; return true })
	if rev != want.Rev+1 || last.ID.Seq != want.VV[s2.MemberID()]+1 {
		t.Fatalf("after migration: rev %d (was %d), change %+v", rev, want.Rev, last)
	}
}

// A store from a newer build is refused with an error that says so, not misread.
func TestFormatTooNew(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, func(c *Config) { c.Dir = dir })
	put(t, s, "a", "1")
	if err := s.db.Set(metaFormat, u64(storeFormat+1), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(DefaultConfig(dir))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("format %d", storeFormat+1)) || !strings.Contains(err.Error(), "newer continuum") {
		t.Fatalf("open: %v", err)
	}
}

// The layout's point (keys.go): what a commit writes lands after every older revision record,
// so a flushed file overlaps none of them, and compacting it into the store rewrites a small
// part of the store rather than all of it.
func TestFlushedFilesDoNotOverlapOlderRevisions(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	// Random values: Pebble compresses tables, and the sizes compared are on disk.
	rnd := rand.New(rand.NewPCG(1, 2))
	value := func() []byte {
		v := make([]byte, 1000)
		for i := range v {
			v[i] = byte(rnd.Uint32())
		}
		return v
	}
	for i := range 20000 {
		if _, err := s.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "user%05d", i), Value: value()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	old := s.Rev()
	var oldBytes uint64
	levels, err := s.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range levels {
		for _, f := range l {
			oldBytes += f.Size
		}
	}
	for i := range 500 {
		if _, err := s.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "user%05d", i*7), Value: value()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err = s.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	if len(levels[0]) == 0 {
		t.Fatal("no L0 file after the flush")
	}
	lo, hi := []byte(nil), []byte(nil)
	for _, f := range levels[0] {
		if k := f.Smallest.UserKey; bytes.Compare(k, changeKey(old+1)) < 0 {
			t.Errorf("flushed file %v starts at %q, below the first new revision %d: it overlaps older records", f.FileNum, k, old+1)
		}
		if lo == nil || bytes.Compare(f.Smallest.UserKey, lo) < 0 {
			lo = f.Smallest.UserKey
		}
		if bytes.Compare(f.Largest.UserKey, hi) > 0 {
			hi = f.Largest.UserKey
		}
	}
	before := s.StorageIO()
	if err := s.db.Compact(ctx, lo, append(hi, 0), false); err != nil && !errors.Is(err, pebble.ErrClosed) {
		t.Fatal(err)
	}
	rewritten := s.StorageIO().CompactedBytes - before.CompactedBytes
	// The new revisions are ~0.5 MB and the store below them ~20 MB: what is rewritten is them
	// and the file or two at the end of the r-space and the origin index, not the store.
	if rewritten > oldBytes/4 {
		t.Fatalf("compacting the flushed files rewrote %d bytes of a %d-byte store", rewritten, oldBytes)
	}
	t.Logf("compacting %d new revisions into a %d-byte store rewrote %d bytes", s.Rev()-old, oldBytes, rewritten)
}
