package mvcc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// openTest opens a store in a temporary directory, closed at cleanup.
func openTest(t testing.TB, mod func(*Config)) *Store {
	t.Helper()
	cfg := DefaultConfig(t.TempDir())
	if mod != nil {
		mod(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t testing.TB, s *Store, k, v string) int64 {
	t.Helper()
	r, err := s.Put(context.Background(), &pb.PutRequest{Key: []byte(k), Value: []byte(v)})
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

func TestRevisionsAndVersions(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	if s.Rev() != 1 {
		t.Fatalf("empty store at revision %d, want 1", s.Rev())
	}
	steps := []struct {
		name    string
		do      func() int64
		wantRev int64
	}{
		{"put creates", func() int64 { return put(t, s, "a", "1") }, 2},
		{"put updates", func() int64 { return put(t, s, "a", "2") }, 3},
		{"delete nothing keeps revision", func() int64 {
			r, _ := s.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("zz")})
			return r.Header.Revision
		}, 3},
		{"delete", func() int64 {
			r, _ := s.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("a")})
			return r.Header.Revision
		}, 4},
		{"txn of two puts is one revision", func() int64 {
			r, err := s.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{
				{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("a"), Value: []byte("3")}}},
				{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("b"), Value: []byte("3")}}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			return r.Header.Revision
		}, 5},
		{"read-only txn keeps revision", func() int64 {
			r, _ := s.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("a")}}}}})
			return r.Header.Revision
		}, 5},
	}
	for _, st := range steps {
		if got := st.do(); got != st.wantRev {
			t.Fatalf("%s: revision %d, want %d", st.name, got, st.wantRev)
		}
	}
	r, err := s.Range(&pb.RangeRequest{Key: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	// The delete reset the version: recreated at 5 with version 1.
	if kv := r.Kvs[0]; kv.CreateRevision != 5 || kv.ModRevision != 5 || kv.Version != 1 {
		t.Fatalf("after delete and recreate: %+v", kv)
	}
	if _, err := s.Range(&pb.RangeRequest{Key: []byte("a"), Revision: 6}); !errors.Is(err, ErrFutureRev) {
		t.Fatalf("future: %v", err)
	}
}

func TestChangeLog(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, func(c *Config) { c.Dir = dir })
	put(t, s, "a", "1")
	if _, err := s.Txn(context.Background(), &pb.TxnRequest{Success: []*pb.RequestOp{
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("b"), Value: []byte("2")}}},
		{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("a")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	var changes []Change
	if _, err := s.ReadLog(2, 0, func(c *Change) bool { changes = append(changes, *c); return true }); err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 {
		t.Fatalf("%d changes, want 2", len(changes))
	}
	c0, c1 := changes[0], changes[1]
	if c0.ID != (ChangeID{s.MemberID(), 1}) || c1.ID != (ChangeID{s.MemberID(), 2}) {
		t.Fatalf("ids %v %v", c0.ID, c1.ID)
	}
	if !c0.Time.Less(c1.Time) || c0.Revision != 2 || c1.Revision != 3 {
		t.Fatalf("time/revision: %+v %+v", c0, c1)
	}
	if len(c1.Ops) != 2 || string(c1.Ops[0].Key) != "b" || c1.Ops[1].Delete != true || string(c1.Ops[1].Key) != "a" {
		t.Fatalf("txn change ops: %+v", c1.Ops)
	}
	if c1.Hash != ContentHash(c1.ID, c1.Time, c1.Ops) || c0.Hash == c1.Hash {
		t.Fatalf("content hash does not match the stored ops")
	}

	// A restart continues the sequence, the revision and the clock.
	member := s.MemberID()
	s.Close()
	s2 := openTest(t, func(c *Config) {
		c.Dir = dir
		c.Now = func() time.Time { return time.Unix(0, c1.Time.Wall-int64(time.Hour)) } // clock stepped back
	})
	if s2.MemberID() != member || s2.Rev() != 3 {
		t.Fatalf("after restart: member %x rev %d", s2.MemberID(), s2.Rev())
	}
	put(t, s2, "c", "3")
	var last Change
	_, _ = s2.ReadLog(4, 0, func(c *Change) bool { last = *c; return true })
	if last.ID.Seq != 3 || !c1.Time.Less(last.Time) {
		t.Fatalf("after restart with the clock stepped back: %+v (previous %v)", last, c1.Time)
	}
}

func TestCompactKeepsLatestVersions(t *testing.T) {
	s := openTest(t, func(c *Config) { c.CompactionBatch = 2 }) // several chunks
	for i := range 5 {
		put(t, s, "k", fmt.Sprint(i)) // revs 2..6
	}
	put(t, s, "gone", "x")                                                                                      // 7
	if _, err := s.DeleteRange(context.Background(), &pb.DeleteRangeRequest{Key: []byte("gone")}); err != nil { // 8
		t.Fatal(err)
	}
	for i := range 5 {
		put(t, s, fmt.Sprint("o", i), "x") // 9..13
	}
	if err := s.Compact(context.Background(), 8, true); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rev     int64
		key     string
		want    string
		wantErr error
	}{
		{7, "k", "", ErrCompacted},
		{8, "k", "4", nil},
		{8, "gone", "", nil},
		{0, "k", "4", nil},
		{12, "o3", "x", nil},
	}
	for _, tt := range tests {
		r, err := s.Range(&pb.RangeRequest{Key: []byte(tt.key), Revision: tt.rev})
		if !errors.Is(err, tt.wantErr) {
			t.Fatalf("rev %d %s: err %v, want %v", tt.rev, tt.key, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		got := ""
		if len(r.Kvs) > 0 {
			got = string(r.Kvs[0].Value)
		}
		if got != tt.want {
			t.Fatalf("rev %d %s = %q, want %q", tt.rev, tt.key, got, tt.want)
		}
	}
	// A store that is not replicated drops the change headers below the compaction.
	if _, err := s.ReadLog(1, 0, func(c *Change) bool {
		if c.Revision < 8 {
			t.Errorf("change at revision %d survived the compaction at 8", c.Revision)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if s.KeyCount() != 6 {
		t.Fatalf("index holds %d keys, want 6 (the deleted key compacted away)", s.KeyCount())
	}
}

func TestHashKVSameDataSameHash(t *testing.T) {
	a, b := openTest(t, nil), openTest(t, nil)
	put(t, a, "x", "1")
	put(t, a, "y", "2")
	put(t, b, "y", "0")
	put(t, b, "y", "2") // different history and revisions, same data
	put(t, b, "x", "1")
	ha, _, _, err := a.HashKV(0)
	if err != nil {
		t.Fatal(err)
	}
	hb, _, _, _ := b.HashKV(0)
	if ha != hb {
		t.Fatalf("same data, different hashes: %x %x", ha, hb)
	}
	put(t, b, "x", "2")
	if hb2, _, _, _ := b.HashKV(0); hb2 == ha {
		t.Fatal("different data, same hash")
	}
}

func TestFsyncModes(t *testing.T) {
	for _, m := range []string{"always", "batch", "never"} {
		t.Run(m, func(t *testing.T) {
			mode, err := ParseFsyncMode(m)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			s := openTest(t, func(c *Config) { c.Dir = dir; c.Fsync = mode })
			put(t, s, "k", "v")
			size := s.DataSize()
			s.Close()
			s2 := openTest(t, func(c *Config) { c.Dir = dir })
			if r, _ := s2.Range(&pb.RangeRequest{Key: []byte("k")}); len(r.Kvs) != 1 {
				t.Fatal("write lost across a clean close")
			}
			if s2.DataSize() != size || size == 0 {
				t.Fatalf("data size %d after reopening, %d before", s2.DataSize(), size)
			}
		})
	}
	if _, err := ParseFsyncMode("sometimes"); err == nil {
		t.Fatal("bad mode accepted")
	}
}

func TestQuotaNoSpace(t *testing.T) {
	s := openTest(t, func(c *Config) { c.QuotaBytes = 100 << 10 })
	ctx := context.Background()
	val := make([]byte, 10<<10)
	var err error
	n := 0
	for ; n < 50 && err == nil; n++ {
		_, err = s.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "k%02d", n), Value: val})
	}
	if !errors.Is(err, ErrNoSpace) || len(s.Alarms()) != 1 {
		t.Fatalf("after %d puts: %v, alarms %v", n, err, s.Alarms())
	}
	if _, _, err := s.LeaseGrant(ctx, 0, 10); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("lease grant under NOSPACE: %v", err)
	}
	d, err := s.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("k"), RangeEnd: []byte("l")})
	if err != nil {
		t.Fatalf("delete under NOSPACE: %v", err)
	}
	if err := s.Compact(ctx, d.Header.Revision, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, &pb.PutRequest{Key: []byte("x")}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("the alarm must stay until disarmed: %v", err)
	}
	s.DisarmNoSpace()
	if s.DataSize() > 1<<10 {
		t.Fatalf("compaction left %d bytes", s.DataSize())
	}
	if _, err := s.Put(ctx, &pb.PutRequest{Key: []byte("x")}); err != nil {
		t.Fatalf("after disarm: %v", err)
	}
}
