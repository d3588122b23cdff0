package kvclient

import (
	"reflect"
	"testing"
)

// TestConflictsWireRoundTrip: a conflict log survives the Status service's encoding, a lost
// empty value stays distinct from a lost deletion, and Name finds the origins' names.
func TestConflictsWireRoundTrip(t *testing.T) {
	in := &ConflictsResponse{MemberID: 9, Total: 5, Members: []Member{{ID: 9, Name: "cloud"}, {ID: 7, Name: "edge"}},
		Conflicts: []Conflict{
			{Key: []byte("/rtdb/default/a"), Kept: Stamp{Time: Timestamp{Wall: 20, Logical: 1}, Origin: 9},
				Lost: Stamp{Time: Timestamp{Wall: 10}, Origin: 7}, Change: ChangeID{Origin: 7, Seq: 3},
				LostValue: []byte(`"x"`), Revision: 12},
			{Key: []byte("k"), Kept: Stamp{Time: Timestamp{Wall: 2}, Origin: 9}, KeptDeleted: true,
				Lost: Stamp{Time: Timestamp{Wall: 1}, Origin: 7}, Change: ChangeID{Origin: 7, Seq: 4}, LostValue: []byte{}},
			{Key: []byte("d"), Lost: Stamp{Time: Timestamp{Wall: 1}, Origin: 7}, Change: ChangeID{Origin: 7, Seq: 5}, LostDeleted: true},
		}}
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var out ConflictsResponse
	if err := out.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, &out) {
		t.Fatalf("round trip\n got %+v\nwant %+v", out, *in)
	}
	if out.Name(7) != "edge" || out.Name(1) != "" {
		t.Errorf("Name(7) %q, Name(1) %q", out.Name(7), out.Name(1))
	}
	req := &ConflictsRequest{Prefix: []byte("/rtdb/default")}
	b, _ = req.Marshal()
	var req2 ConflictsRequest
	if err := req2.Unmarshal(b); err != nil || !reflect.DeepEqual(req, &req2) {
		t.Fatalf("request round trip: %+v %v", req2, err)
	}
}
