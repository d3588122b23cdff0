package server

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// codec marshals etcd's gogo-generated messages with their own generated Marshal/Unmarshal
// methods (no reflection), falling back to the protobuf runtime for anything else (e.g. the gRPC
// health service). It registers under the name "proto", as etcd's own server codec does.
type codec struct{}

type gogoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func (codec) Marshal(v any) ([]byte, error) {
	if m, ok := v.(gogoMessage); ok {
		return m.Marshal()
	}
	if m, ok := v.(proto.Message); ok {
		return proto.Marshal(m)
	}
	if m, ok := v.(protoadapt.MessageV1); ok {
		return proto.Marshal(protoadapt.MessageV2Of(m))
	}
	return nil, fmt.Errorf("codec: cannot marshal %T", v)
}

func (codec) Unmarshal(data []byte, v any) error {
	if m, ok := v.(gogoMessage); ok {
		return m.Unmarshal(data)
	}
	if m, ok := v.(proto.Message); ok {
		return proto.Unmarshal(data, m)
	}
	if m, ok := v.(protoadapt.MessageV1); ok {
		return proto.Unmarshal(data, protoadapt.MessageV2Of(m))
	}
	return fmt.Errorf("codec: cannot unmarshal into %T", v)
}

func (codec) Name() string { return "proto" }

var _ encoding.Codec = codec{}

// clientCodec is codec for the client-facing server, on gRPC's buffer interface: a response
// above gRPC's pooling threshold is marshalled into a pooled buffer, which gRPC frees once it is
// written, and a request that arrived in one buffer is decoded in place, without the copy the
// []byte interface makes. For large values (the NPM platform's 100 kB) each saves an allocation
// of the value per request. Decoding in place is safe because etcd's gogo-generated Unmarshal
// and the protobuf runtime copy every bytes and string field out of the input; the peer server
// keeps codec, whose messages are decoded by package replication's own code.
type clientCodec struct{}

type sizedMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

func (clientCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(sizedMarshaler)
	if !ok {
		b, err := codec{}.Marshal(v)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	size := m.Size()
	if mem.IsBelowBufferPoolingThreshold(size) {
		b := make([]byte, size)
		if _, err := m.MarshalToSizedBuffer(b); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBuffer((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (clientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if len(data) == 1 {
		return codec{}.Unmarshal(data[0].ReadOnlyData(), v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return codec{}.Unmarshal(buf.ReadOnlyData(), v)
}

func (clientCodec) Name() string { return "proto" }

var _ encoding.CodecV2 = clientCodec{}
