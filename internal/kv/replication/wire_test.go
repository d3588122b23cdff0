package replication

import (
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
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
	hr := &HoldersResponse{ID: kvclient.ChangeID{Origin: 3, Seq: 9}, Holders: []Holder{{Member: Member{ID: 3, Name: "a"}, Has: true}, {Member: Member{ID: 4}, LastContact: 77}}}
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
// something that decodes to the same batch, with the current decoder and the hand-written one.
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
		// A member running the hand-written decoder reads the re-encoding alike.
		var old SyncBatch
		if err := legacyUnmarshalSyncBatch(again, &old); err != nil || !reflect.DeepEqual(m, old) {
			t.Fatalf("the hand-written decoder reads the re-encoded batch as %+v, %v; want %+v", old, err, m)
		}
	})
}

// Repeated varints arrive packed from any standard proto3 encoder (the default for repeated
// scalars) and unpacked from this package; both decode to the same values, and a mix of both
// forms concatenates.
func TestWireAcceptsPackedRepeatedVarints(t *testing.T) {
	packed := func(num protowire.Number, vs ...uint64) []byte {
		var run []byte
		for _, v := range vs {
			run = protowire.AppendVarint(run, v)
		}
		b := protowire.AppendTag(nil, num, protowire.BytesType)
		return protowire.AppendBytes(b, run)
	}
	var batch SyncBatch
	b := append(packed(10, 3, 1<<63), protowire.AppendVarint(protowire.AppendTag(nil, 10, protowire.VarintType), 5)...)
	if err := batch.Unmarshal(b); err != nil || !slices.Equal(batch.Removed, []uint64{3, 1 << 63, 5}) {
		t.Errorf("packed removed: %v, %v; want [3 2^63 5]", batch.Removed, err)
	}
	var req SyncRequest
	if err := req.Unmarshal(packed(4, 7, 9)); err != nil || !slices.Equal(req.Direct, []uint64{7, 9}) {
		t.Errorf("packed direct: %v, %v; want [7 9]", req.Direct, err)
	}
	// A packed run cut in the middle of a varint is an error, not a silent truncation.
	bad := protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), []byte{0x80})
	if err := batch.Unmarshal(bad); err == nil {
		t.Error("a truncated packed run decoded without error")
	}
}

// The encoding is what members already running send and read: these bytes were produced by the
// encoder before packed decoding existed (repeated varints unpacked). They must decode as they
// did, and what the current encoder sends must decode with the hand-written decoder that older
// members run (legacy_wire_test.go) to the same message. The bytes themselves may differ: the
// generated encoder omits zero scalars (here sent_unix_nano 0), which every decoder reads as 0.
// TestWireMixedVersions checks the same for every message type.
func TestWireGoldenBytes(t *testing.T) {
	batch := &SyncBatch{
		Changes: []mvcc.Change{{ID: mvcc.ChangeID{Origin: 7, Seq: 1}, Time: mvcc.Timestamp{Wall: 1000, Logical: 2},
			Ops: []mvcc.Op{{Key: []byte("a"), Value: []byte("1"), Lease: 5}}}},
		Have:    mvcc.VersionVector{7: 1},
		Sender:  Member{ID: 9, Name: "n9"},
		Removed: []uint64{3, 4},
	}
	req := &SyncRequest{Caller: Member{ID: 1, Name: "a"}, Have: mvcc.VersionVector{2: 3}, ClusterToken: "t", Direct: []uint64{2, 5}}
	b, err := batch.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var oldBatch SyncBatch
	if err := legacyUnmarshalSyncBatch(b, &oldBatch); err != nil || !reflect.DeepEqual(&oldBatch, batch) {
		t.Errorf("a member running the hand-written decoder reads the batch %x as %+v, %v", b, oldBatch, err)
	}
	if !strings.Contains(hex.EncodeToString(b), "5003"+"5004") {
		t.Errorf("batch %x: removed must be sent unpacked (one tag per value)", b)
	}
	if b, err = req.Marshal(); err != nil {
		t.Fatal(err)
	}
	var oldReq SyncRequest
	if err := legacyUnmarshalSyncRequest(b, &oldReq); err != nil || !reflect.DeepEqual(&oldReq, req) {
		t.Errorf("a member running the hand-written decoder reads the request %x as %+v, %v", b, oldReq, err)
	}
	if !strings.Contains(hex.EncodeToString(b), "2002"+"2005") {
		t.Errorf("request %x: direct must be sent unpacked (one tag per value), as members before packed decoding read only that", b)
	}
	gb, _ := hex.DecodeString(goldenBatch)
	var back SyncBatch
	if err := back.Unmarshal(gb); err != nil || !slices.Equal(back.Removed, batch.Removed) || back.Sender.Name != "n9" ||
		len(back.Changes) != 1 || back.Changes[0].Ops[0].Lease != 5 || back.Have[7] != 1 {
		t.Errorf("golden batch decodes as %+v, %v", back, err)
	}
	gr, _ := hex.DecodeString(goldenRequest)
	var r SyncRequest
	if err := r.Unmarshal(gr); err != nil || !reflect.DeepEqual(&r, req) {
		t.Errorf("golden request decodes as %+v, %v; want %+v", r, err, req)
	}
}

// Captured from the encoder at commit 230ea19, before packed decoding was added.
const (
	goldenBatch   = "0a250807100118e80720022a100000000000000000000000000000000032081201611a013120051204080710011a06080912026e39200050035004"
	goldenRequest = "0a0508011201611204080210031a017420022005"
)

// FuzzSyncMessage: the message a stream opens with (a request) or acks with, from any caller;
// decoding never panics and re-encoding is stable, for packed and unpacked direct lists alike.
func FuzzSyncMessage(f *testing.F) {
	for _, m := range []*SyncMessage{
		{Request: &SyncRequest{Caller: Member{ID: 1, Name: "a"}, Have: mvcc.VersionVector{2: 3}, ClusterToken: "t", Direct: []uint64{2, 5}}},
		{Ack: mvcc.VersionVector{1: 5}},
	} {
		b, _ := m.Marshal()
		f.Add(b)
	}
	gr, _ := hex.DecodeString(goldenRequest)
	f.Add(gr)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m SyncMessage
		if err := m.Unmarshal(data); err != nil {
			return
		}
		again, _ := m.Marshal()
		var m2 SyncMessage
		if err := m2.Unmarshal(again); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoding changed the message:\n%+v\n%+v", m, m2)
		}
	})
}
