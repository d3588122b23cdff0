package server

import (
	"fmt"

	"google.golang.org/grpc/encoding"
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
