package server

import (
	"bytes"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
)

// The client codec round-trips etcd's messages small and large (pooled), decodes requests
// that arrive in one buffer or several, and the decoded message owns its bytes: gRPC frees
// (and reuses) the buffers once Unmarshal returns.
func TestClientCodecRoundTripsWithoutAliasing(t *testing.T) {
	c := clientCodec{}
	for _, size := range []int{10, 100 << 10} {
		value := bytes.Repeat([]byte{'v'}, size)
		resp := &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: 7}, Kvs: []*mvccpb.KeyValue{{Key: []byte("k"), Value: value, Version: 3}}, Count: 1}
		data, err := c.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		wire := data.Materialize()
		data.Free()
		want, _ := resp.Marshal()
		if !bytes.Equal(wire, want) {
			t.Fatalf("%d-byte value: the codec's encoding differs from the message's own", size)
		}

		req := &pb.PutRequest{Key: []byte("key"), Value: value, Lease: 9}
		enc, _ := req.Marshal()
		// One buffer, and the same bytes split in three (as frames arrive).
		for _, in := range []mem.BufferSlice{{mem.SliceBuffer(bytes.Clone(enc))},
			{mem.SliceBuffer(bytes.Clone(enc[:2])), mem.SliceBuffer(bytes.Clone(enc[2 : len(enc)/2])), mem.SliceBuffer(bytes.Clone(enc[len(enc)/2:]))}} {
			var got pb.PutRequest
			if err := c.Unmarshal(in, &got); err != nil {
				t.Fatal(err)
			}
			for _, b := range in {
				clear(b.ReadOnlyData()) // what reuse of the freed buffer would do
			}
			if string(got.Key) != "key" || !bytes.Equal(got.Value, value) || got.Lease != 9 {
				t.Fatalf("%d-byte value in %d buffers: decoded %q / %d bytes / lease %d", size, len(in), got.Key, len(got.Value), got.Lease)
			}
		}
	}
	// Messages of the protobuf runtime (the health service) go through it too.
	data, err := c.Marshal(&grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING})
	if err != nil {
		t.Fatal(err)
	}
	var h grpc_health_v1.HealthCheckResponse
	if err := c.Unmarshal(data, &h); err != nil || h.Status != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("health response: %v %v", h.Status, err)
	}
	if _, err := c.Marshal(42); err == nil {
		t.Fatal("marshalled an int")
	}
}
