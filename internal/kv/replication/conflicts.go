package replication

import (
	"bytes"
	"context"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// The Status service's messages are package kvclient's, whose client side links no server code;
// the names here keep the replication code reading as before.
type (
	ConflictsRequest  = kvclient.ConflictsRequest
	ConflictsResponse = kvclient.ConflictsResponse
	HoldersRequest    = kvclient.HoldersRequest
	HoldersResponse   = kvclient.HoldersResponse
	Holder            = kvclient.Holder
	Member            = kvclient.Member
)

func (r *Replicator) conflicts(_ context.Context, req *ConflictsRequest) (*ConflictsResponse, error) {
	resp := &ConflictsResponse{MemberID: r.store.MemberID(), Total: r.store.ConflictsTotal(), Members: r.Members()}
	for _, c := range r.store.Conflicts() {
		if bytes.HasPrefix(c.Key, req.Prefix) {
			resp.Conflicts = append(resp.Conflicts, conflictToClient(c))
		}
	}
	return resp, nil
}

// conflictToClient is c as the Status service sends it.
func conflictToClient(c mvcc.Conflict) kvclient.Conflict {
	return kvclient.Conflict{Key: c.Key, Kept: stampToClient(c.Kept), KeptDeleted: c.KeptDeleted, Lost: stampToClient(c.Lost),
		Change: kvclient.ChangeID(c.Change), LostValue: c.LostValue, LostDeleted: c.LostDeleted, Revision: c.Revision}
}

func stampToClient(s mvcc.Stamp) kvclient.Stamp {
	return kvclient.Stamp{Time: kvclient.Timestamp(s.Time), Origin: s.Origin}
}
