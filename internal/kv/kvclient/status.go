package kvclient

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
)

// The Status service, as a member registers it on its client listeners (package replication).
const (
	StatusService   = "continuum.kv.replication.v1.Status"
	HoldersMethod   = "/" + StatusService + "/Holders"
	ConflictsMethod = "/" + StatusService + "/Conflicts"
)

// QueryConflicts asks a member's Status service (over conn, a client connection to its client
// URL, such as clientv3's ActiveConnection) for its conflict log, for keys starting with prefix.
// A server that is not a continuum kv member (etcd, or a kv member started without a cluster)
// answers codes.Unimplemented.
func QueryConflicts(ctx context.Context, conn grpc.ClientConnInterface, prefix []byte) (*ConflictsResponse, error) {
	resp := new(ConflictsResponse)
	err := conn.Invoke(ctx, ConflictsMethod, &ConflictsRequest{Prefix: prefix}, resp, grpc.ForceCodec(Codec{}))
	return resp, err
}

// QueryHolders asks a member's Status service (over conn, a client connection to its client
// URL) which members hold the change at revision rev of that member.
func QueryHolders(ctx context.Context, conn grpc.ClientConnInterface, rev int64) (*HoldersResponse, error) {
	resp := new(HoldersResponse)
	err := conn.Invoke(ctx, HoldersMethod, &HoldersRequest{Revision: rev}, resp, grpc.ForceCodec(Codec{}))
	return resp, err
}

// Codec is the gRPC codec for messages that encode themselves (Marshal and Unmarshal), as
// these and the peer protocol's do. It names itself "proto": the bytes are protobuf.
type Codec struct{}

// Message is what Codec encodes.
type Message interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// Marshal encodes v, a Message.
func (Codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(Message)
	if !ok {
		return nil, fmt.Errorf("replication codec: cannot marshal %T", v)
	}
	return m.Marshal()
}

// Unmarshal decodes data into v, a Message.
func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(Message)
	if !ok {
		return fmt.Errorf("replication codec: cannot unmarshal into %T", v)
	}
	return m.Unmarshal(data)
}

// Name is "proto".
func (Codec) Name() string { return "proto" }
