package replication

import (
	"reflect"
	"testing"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

func sampleBatch() *SyncBatch {
	return &SyncBatch{
		Changes: []mvcc.Change{
			{ID: mvcc.ChangeID{Origin: 7, Seq: 1}, Time: mvcc.Timestamp{Wall: 1_700_000_000_000_000_000, Logical: 3}, Hash: [16]byte{1, 2, 3},
				Ops: []mvcc.Op{{Key: []byte("a"), Value: []byte("1"), Lease: 42}, {Delete: true, Key: []byte("b")}}},
			{ID: mvcc.ChangeID{Origin: 9, Seq: 4}, Time: mvcc.Timestamp{Wall: 5}, Ops: []mvcc.Op{{Key: []byte("c"), Value: []byte{}}}},
		},
		Have:     mvcc.VersionVector{7: 1, 9: 4},
		Sender:   Member{ID: 9, Name: "n9", PeerURLs: []string{"http://10.0.0.9:2380"}, ClientURLs: []string{"http://10.0.0.9:2379"}},
		SentNano: 123,
		Members:  []Member{{ID: 7, Name: "n7"}},
		Known:    map[uint64]mvcc.VersionVector{7: {7: 1}, 9: {7: 1, 9: 4}},
		Snapshot: []mvcc.SnapshotEntry{
			{Key: []byte("k"), Value: []byte("v"), Lease: 3, Stamp: mvcc.Stamp{Time: mvcc.Timestamp{Wall: 9, Logical: 1}, Origin: 7}},
			{Key: []byte("gone"), Deleted: true, Stamp: mvcc.Stamp{Time: mvcc.Timestamp{Wall: 10}, Origin: 9}},
		},
		SnapshotDone: true,
		SnapshotHave: mvcc.VersionVector{7: 1},
		Removed:      []uint64{3, 1 << 63},
		FrontierSeq:  17, FrontierWall: 1_700_000_000_000_000_001, CollectBefore: 1_699_999_999_000_000_000,
		Bounds: []MemberBound{{ID: 7, FrontierSeq: 1, FrontierWall: 1_700_000_000_000_000_000}, {ID: 8, CollectBefore: 5}},
	}
}

func TestWireRoundTrip(t *testing.T) {
	in := sampleBatch()
	b, _ := in.Marshal()
	var out SyncBatch
	if err := out.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	// An empty value decodes as nil: both mean "empty" to the store.
	in.Changes[1].Ops[0].Value = nil
	if !reflect.DeepEqual(in, &out) {
		t.Fatalf("round trip\n got %+v\nwant %+v", out, *in)
	}
	for _, msg := range []*SyncMessage{
		{Request: &SyncRequest{Caller: Member{ID: 1}, Have: mvcc.VersionVector{}}},
		{Ack: mvcc.VersionVector{1: 5}},
	} {
		b, _ := msg.Marshal()
		var got SyncMessage
		if err := got.Unmarshal(b); err != nil || !reflect.DeepEqual(msg, &got) {
			t.Fatalf("sync message round trip: %+v %v, want %+v", got, err, msg)
		}
	}
	hr := &HoldersResponse{ID: mvcc.ChangeID{Origin: 3, Seq: 9}, Holders: []Holder{{Member: Member{ID: 3, Name: "a"}, Has: true}, {Member: Member{ID: 4}, LastContact: 77}}}
	b, _ = hr.Marshal()
	var hr2 HoldersResponse
	if err := hr2.Unmarshal(b); err != nil || !reflect.DeepEqual(hr, &hr2) {
		t.Fatalf("holders round trip: %+v %v", hr2, err)
	}
	req := &SyncRequest{Caller: Member{ID: 1, Name: "a"}, Have: mvcc.VersionVector{1: 2, 3: 4}, ClusterToken: "tok", Direct: []uint64{5, 6}}
	b, _ = req.Marshal()
	var req2 SyncRequest
	if err := req2.Unmarshal(b); err != nil || !reflect.DeepEqual(req, &req2) {
		t.Fatalf("request round trip: %+v, %v", req2, err)
	}
}

func TestWireRejectsBadChanges(t *testing.T) {
	for name, c := range map[string]mvcc.Change{
		"zero origin": {ID: mvcc.ChangeID{Seq: 1}},
		"zero seq":    {ID: mvcc.ChangeID{Origin: 1}},
		"empty key":   {ID: mvcc.ChangeID{Origin: 1, Seq: 1}, Ops: []mvcc.Op{{Value: []byte("v")}}},
	} {
		b, _ := (&SyncBatch{Changes: []mvcc.Change{c}}).Marshal()
		if err := new(SyncBatch).Unmarshal(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if err := new(SyncBatch).Unmarshal([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Error("truncated message decoded without error")
	}
}

// FuzzSyncBatch: decoding arbitrary bytes never panics, and whatever decodes re-encodes to
// something that decodes to the same batch.
func FuzzSyncBatch(f *testing.F) {
	b, _ := sampleBatch().Marshal()
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m SyncBatch
		if err := m.Unmarshal(data); err != nil {
			return
		}
		again, _ := m.Marshal()
		var m2 SyncBatch
		if err := m2.Unmarshal(again); err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoding changed the batch")
		}
	})
}
