package replication

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	pb "github.com/continuum-project/continuum/internal/kv/replication/replicationpb"
)

// Benchmarks of the replication path's wire code: encoding a SyncBatch the sender holds as mvcc
// types into bytes, and decoding bytes into mvcc types the puller applies. Each implementation is
// measured from and to the types the replication code works with, so the generated code pays its
// conversion (pbconvert.go) as the replication path would. The implementation is the innermost
// sub-benchmark, so `-count` interleaves them and drift of a shared machine hits all alike.
// docs/benchmarks/kv-replication-wire.md has the command and the figures.

// wireImpl encodes and decodes the replication messages one way.
type wireImpl struct {
	name      string
	marshal   func(*SyncBatch) ([]byte, error)
	unmarshal func([]byte, *SyncBatch) error
}

// The implementations: the hand-written protowire code wire.go held before (legacy_wire_test.go),
// protoc-gen-go's code (reflection-driven tables, proto.Marshal/Unmarshal), and vtprotobuf's
// code as wire.go uses it (MarshalVT; UnmarshalVTUnsafe into a pooled message, then copies).
var wireImpls = []wireImpl{
	{"hand", legacyMarshalSyncBatch, legacyUnmarshalSyncBatch},
	{"protogo", func(m *SyncBatch) ([]byte, error) { return proto.Marshal(m.toPB()) }, func(b []byte, m *SyncBatch) error {
		var p pb.SyncBatch
		if err := proto.Unmarshal(b, &p); err != nil {
			return err
		}
		return m.fromPB(&p, true) // proto.Unmarshal copies: p owns its bytes
	}},
	{"vtproto", (*SyncBatch).Marshal, func(b []byte, m *SyncBatch) error { return m.Unmarshal(b) }},
}

// benchBatches are the batches a Sync stream carries: changes as the log streams them (one put
// each, as most writes are, with the sender's vector over a 3-member cluster), a heartbeat (no
// changes; membership, what each member holds, frontiers), and a batch of a snapshot transfer.
func benchBatches() []struct {
	name  string
	batch *SyncBatch
} {
	rng := rand.New(rand.NewPCG(3, 4))
	members := []Member{
		{ID: 0x1a2b3c4d5e6f7081, Name: "edge-a", PeerURLs: []string{"http://10.0.1.1:2380"}, ClientURLs: []string{"http://10.0.1.1:2379"}},
		{ID: 0x2b3c4d5e6f708192, Name: "edge-b", PeerURLs: []string{"http://10.0.1.2:2380"}, ClientURLs: []string{"http://10.0.1.2:2379"}},
		{ID: 0x3c4d5e6f708192a3, Name: "cloud", PeerURLs: []string{"http://10.0.2.1:2380"}, ClientURLs: []string{"http://10.0.2.1:2379"}},
	}
	vv := func() mvcc.VersionVector {
		return mvcc.VersionVector{members[0].ID: 1_048_576 + rng.Uint64N(1000), members[1].ID: 524_288 + rng.Uint64N(1000), members[2].ID: 2_000_000}
	}
	const wall = 1_767_225_600_000_000_000
	changes := func(n, valueSize int) []mvcc.Change {
		cs := make([]mvcc.Change, n)
		for i := range cs {
			v := make([]byte, valueSize)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			c := &cs[i]
			c.ID = mvcc.ChangeID{Origin: members[0].ID, Seq: 1_048_576 + uint64(i)}
			c.Time = mvcc.Timestamp{Wall: wall + int64(i)*1000, Logical: uint32(i % 3)}
			c.Ops = []mvcc.Op{{Key: fmt.Appendf(nil, "/registry/sensors/%08d", rng.IntN(1e8)), Value: v}}
			c.Hash = mvcc.ContentHash(c.ID, c.Time, c.Ops)
		}
		return cs
	}
	type named = struct {
		name  string
		batch *SyncBatch
	}
	var out []named
	for _, n := range []int{1, 64, 1024} {
		for _, size := range []int{100, 4096} {
			out = append(out, named{fmt.Sprintf("changes=%dx%s", n, byteSize(size)),
				&SyncBatch{Changes: changes(n, size), Have: vv(), Sender: members[0], SentNano: wall}})
		}
	}
	out = append(out, named{"heartbeat", &SyncBatch{
		Have: vv(), Sender: members[0], SentNano: wall, Members: members,
		Known:       map[uint64]mvcc.VersionVector{members[0].ID: vv(), members[1].ID: vv(), members[2].ID: vv()},
		FrontierSeq: 1_048_576, FrontierWall: wall - 5e9, CollectBefore: wall - 60e9,
		Bounds: []MemberBound{{ID: members[1].ID, FrontierSeq: 524_288, FrontierWall: wall - 6e9, CollectBefore: wall - 61e9},
			{ID: members[2].ID, FrontierSeq: 2_000_000, FrontierWall: wall - 7e9, CollectBefore: wall - 62e9}},
	}})
	snap := make([]mvcc.SnapshotEntry, 1024)
	for i := range snap {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		snap[i] = mvcc.SnapshotEntry{Key: fmt.Appendf(nil, "/registry/sensors/%08d", i), Value: v, Lease: int64(i % 2),
			Stamp: mvcc.Stamp{Time: mvcc.Timestamp{Wall: wall + int64(i)}, Origin: members[i%3].ID}}
	}
	out = append(out, named{"snapshot=1024x100B", &SyncBatch{Sender: members[0], SentNano: wall, Snapshot: snap,
		SnapshotDone: true, SnapshotHave: vv()}})
	return out
}

func byteSize(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

func BenchmarkWireEncode(b *testing.B) {
	for _, bb := range benchBatches() {
		b.Run(bb.name, func(b *testing.B) {
			for _, impl := range wireImpls {
				b.Run("impl="+impl.name, func(b *testing.B) {
					enc, _ := impl.marshal(bb.batch)
					b.SetBytes(int64(len(enc)))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := impl.marshal(bb.batch); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func BenchmarkWireDecode(b *testing.B) {
	for _, bb := range benchBatches() {
		b.Run(bb.name, func(b *testing.B) {
			// Every implementation decodes the same bytes: what a member running the
			// hand-written encoder sends.
			enc, err := legacyMarshalSyncBatch(bb.batch)
			if err != nil {
				b.Fatal(err)
			}
			for _, impl := range wireImpls {
				b.Run("impl="+impl.name, func(b *testing.B) {
					b.SetBytes(int64(len(enc)))
					b.ReportAllocs()
					for b.Loop() {
						var m SyncBatch
						if err := impl.unmarshal(enc, &m); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// TestWireImplsAgree: the benchmarked implementations decode each benchmark batch alike, so
// the benchmark compares equal work.
func TestWireImplsAgree(t *testing.T) {
	for _, bb := range benchBatches() {
		enc, err := legacyMarshalSyncBatch(bb.batch)
		if err != nil {
			t.Fatal(err)
		}
		var want SyncBatch
		if err := legacyUnmarshalSyncBatch(enc, &want); err != nil {
			t.Fatal(err)
		}
		for _, impl := range wireImpls {
			var got SyncBatch
			if err := impl.unmarshal(enc, &got); err != nil {
				t.Fatalf("%s: %s: %v", bb.name, impl.name, err)
			}
			assertBatchEqual(t, bb.name+" "+impl.name+" decode", &got, &want)
			own, err := impl.marshal(bb.batch)
			if err != nil {
				t.Fatal(err)
			}
			var back SyncBatch
			if err := legacyUnmarshalSyncBatch(own, &back); err != nil {
				t.Fatalf("%s: the hand-written decoder cannot read %s's encoding: %v", bb.name, impl.name, err)
			}
			assertBatchEqual(t, bb.name+" "+impl.name+" encode", &back, &want)
		}
	}
}
