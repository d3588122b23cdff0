package replication

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The codec (wire.go: the generated code and pbconvert.go's conversion, which checks and drops
// fields) is held to replication.proto, the definition other implementations use: the .proto is
// compiled here (protocompile, the parser buf is built on), random messages of each type are built
// from its descriptors with dynamicpb, encoded by the protobuf runtime, decoded and re-encoded by
// wire.go, and decoded again by the runtime: the result must equal the original, with no field
// left unknown. A field the .proto declares that the conversion skips or drops on the way back
// fails this test.

func compileProto(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{})}
	files, err := c.Compile(context.Background(), "replication.proto")
	if err != nil {
		t.Fatalf("compile replication.proto: %v", err)
	}
	return files[0]
}

// codec is one message type of wire.go.
type codec interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func TestWireMatchesProto(t *testing.T) {
	fd := compileProto(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		msg string
		new func() codec
	}{
		{"SyncBatch", func() codec { return new(SyncBatch) }},
		{"SyncMessage", func() codec { return new(SyncMessage) }},
		{"SyncRequest", func() codec { return new(SyncRequest) }},
		{"HoldersRequest", func() codec { return new(HoldersRequest) }},
		{"HoldersResponse", func() codec { return new(HoldersResponse) }},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			md := fd.Messages().ByName(protoreflect.Name(tc.msg))
			if md == nil {
				t.Fatalf("replication.proto has no message %s", tc.msg)
			}
			for i := range 300 {
				in := dynamicpb.NewMessage(md)
				fill(rng, in, 0)
				b, err := proto.MarshalOptions{Deterministic: true}.Marshal(in)
				if err != nil {
					t.Fatal(err)
				}
				c := tc.new()
				if err := c.Unmarshal(b); err != nil {
					t.Fatalf("#%d: wire.go cannot decode what the .proto encodes: %v\n%v", i, err, in)
				}
				again, err := c.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				out := dynamicpb.NewMessage(md)
				if err := proto.Unmarshal(again, out); err != nil {
					t.Fatalf("#%d: the .proto cannot decode what wire.go encodes: %v", i, err)
				}
				if u := unknownFields(out.ProtoReflect()); u != "" {
					t.Fatalf("#%d: wire.go sends fields the .proto does not declare (in %s)", i, u)
				}
				if !proto.Equal(in, out) {
					t.Fatalf("#%d: round trip through wire.go changed the message\n in: %v\nout: %v", i, in, out)
				}
			}
		})
	}
}

// unknownFields names the first message (by type) holding fields its descriptor lacks.
func unknownFields(m protoreflect.Message) string {
	if len(m.GetUnknown()) > 0 {
		return string(m.Descriptor().FullName())
	}
	found := ""
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i := range v.List().Len() {
				if found = unknownFields(v.List().Get(i).Message()); found != "" {
					return false
				}
			}
		default:
			found = unknownFields(v.Message())
		}
		return found == ""
	})
	return found
}

// fill sets random values in m within what the protocol allows (the invariants wire.go relies
// on: version vector entries by ascending, non-zero origin; 16-byte change hashes; a frontier
// only with its wall time; a snapshot's vector only with snapshot_done).
func fill(rng *rand.Rand, m *dynamicpb.Message, depth int) {
	md := m.Descriptor()
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if rng.IntN(4) == 0 {
			continue // absent
		}
		if fd.IsList() {
			n := rng.IntN(4)
			if depth > 2 && fd.Message() != nil {
				n = min(n, 1)
			}
			l := m.Mutable(fd).List()
			for range n {
				if fd.Message() != nil {
					e := dynamicpb.NewMessage(fd.Message())
					fill(rng, e, depth+1)
					l.Append(protoreflect.ValueOfMessage(e))
				} else {
					l.Append(scalar(rng, fd))
				}
			}
			continue
		}
		if fd.Message() != nil {
			e := dynamicpb.NewMessage(fd.Message())
			fill(rng, e, depth+1)
			m.Set(fd, protoreflect.ValueOfMessage(e))
			continue
		}
		m.Set(fd, scalar(rng, fd))
	}
	constrain(rng, m)
}

func scalar(rng *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rng.IntN(2) == 1)
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64([]uint64{1, 300, 1 << 40, 1<<64 - 1}[rng.IntN(4)] - uint64(rng.IntN(2)))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64([]int64{1, 1_700_000_000_000_000_000, -5, 1 << 62}[rng.IntN(4)])
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32([]uint32{1, 7, 1<<32 - 1}[rng.IntN(3)])
	case protoreflect.StringKind:
		return protoreflect.ValueOfString([]string{"a", "edge-1", "http://10.0.0.1:2380", "ü"}[rng.IntN(4)])
	case protoreflect.BytesKind:
		b := make([]byte, 1+rng.IntN(20))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic("replication.proto uses a scalar kind this test does not generate: " + fd.Kind().String())
}

// constrain adjusts a filled message to the protocol's invariants (see fill).
func constrain(rng *rand.Rand, m *dynamicpb.Message) {
	md := m.Descriptor()
	get := func(name string) protoreflect.FieldDescriptor { return md.Fields().ByName(protoreflect.Name(name)) }
	// Version vectors and the known list are maps on the wire: one entry per key, ascending.
	sortUnique := func(list, key string) {
		fd := get(list)
		if fd == nil || !m.Has(fd) {
			return
		}
		l := m.Mutable(fd).List()
		seen := map[uint64]bool{}
		var keep []protoreflect.Value
		for i := range l.Len() {
			e := l.Get(i).Message()
			kf := e.Descriptor().Fields().ByName(protoreflect.Name(key))
			k := e.Get(kf).Uint()
			if k == 0 {
				k = uint64(1 + rng.IntN(1000))
				e.Set(kf, protoreflect.ValueOfUint64(k))
			}
			if !seen[k] {
				seen[k] = true
				keep = append(keep, l.Get(i))
			}
		}
		slices.SortFunc(keep, func(a, b protoreflect.Value) int {
			ka := a.Message().Get(a.Message().Descriptor().Fields().ByName(protoreflect.Name(key))).Uint()
			kb := b.Message().Get(b.Message().Descriptor().Fields().ByName(protoreflect.Name(key))).Uint()
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return 0
		})
		l.Truncate(0)
		for _, v := range keep {
			l.Append(v)
		}
		if l.Len() == 0 {
			m.Clear(fd)
		}
	}
	for _, f := range []string{"have", "snapshot_have"} {
		if fd := get(f); fd != nil && fd.Message() != nil && fd.Message().Name() == "VersionVectorEntry" {
			sortUnique(f, "origin")
		}
	}
	// wire.go always sends the member sub-messages (an empty one is a member not yet known), so
	// presence matches only when they are present.
	present := func(name string) {
		if fd := get(name); !m.Has(fd) {
			m.Set(fd, protoreflect.ValueOfMessage(dynamicpb.NewMessage(fd.Message())))
		}
	}
	switch md.Name() {
	case "SyncRequest":
		present("caller")
	case "Holder":
		present("member")
	case "SnapshotEntry":
		if len(m.Get(get("key")).Bytes()) == 0 {
			m.Set(get("key"), protoreflect.ValueOfBytes([]byte("k")))
		}
		if m.Get(get("origin")).Uint() == 0 {
			m.Set(get("origin"), protoreflect.ValueOfUint64(7))
		}
	case "Ack":
		sortUnique("have", "origin")
	case "SyncBatch":
		present("sender")
		sortUnique("known", "member_id")
		if m.Get(get("frontier_wall")).Int() == 0 {
			m.Clear(get("frontier_seq"))
		}
		if !m.Get(get("snapshot_done")).Bool() {
			m.Clear(get("snapshot_have"))
		}
	case "MemberHave", "MemberBound":
		if m.Get(get("member_id")).Uint() == 0 {
			m.Set(get("member_id"), protoreflect.ValueOfUint64(uint64(1+rng.IntN(1000))))
		}
	case "Op":
		if len(m.Get(get("key")).Bytes()) == 0 {
			m.Set(get("key"), protoreflect.ValueOfBytes([]byte("k")))
		}
	case "Change":
		for _, f := range []string{"origin", "seq"} {
			if m.Get(get(f)).Uint() == 0 {
				m.Set(get(f), protoreflect.ValueOfUint64(uint64(1+rng.IntN(1000))))
			}
		}
		h := make([]byte, 16)
		h[0] = byte(rng.IntN(256))
		m.Set(get("hash"), protoreflect.ValueOfBytes(h))
	}
}
