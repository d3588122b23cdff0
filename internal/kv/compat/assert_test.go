package compat

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errCode returns the gRPC code and message of err whether it is a raw gRPC status or the
// rpctypes.EtcdError clientv3 turns it into.
func errCode(err error) (codes.Code, string) {
	var ev rpctypes.EtcdError
	if errors.As(err, &ev) {
		return ev.Code(), ev.Error()
	}
	if s, ok := status.FromError(err); ok {
		return s.Code(), s.Message()
	}
	return codes.Unknown, err.Error()
}

// wantErr fails t unless err is the etcd error want: same gRPC code and message, so that
// clients (which match on messages, see rpctypes.Error) react as they do with etcd.
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", want)
	}
	gc, gm := errCode(err)
	wc, wm := errCode(want)
	if gc != wc || gm != wm {
		t.Fatalf("got error %s %q, want %s %q", gc, gm, wc, wm)
	}
}

// result carries a call's two results so that res(c.Get(...)).must(t) fits on one line.
type result[T any] struct {
	v   T
	err error
}

func res[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) must(t testing.TB) T {
	t.Helper()
	if r.err != nil {
		t.Fatalf("unexpected error: %v", r.err)
	}
	return r.v
}

// keys returns the keys of kvs, for compact comparisons.
func keys(kvs []*mvccpb.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key)
	}
	return out
}

func eventsString(evs []*clientv3.Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(ev.Type.String())
		b.WriteString(":")
		b.Write(ev.Kv.Key)
		b.WriteString("@")
		b.WriteString(itoa(ev.Kv.ModRevision))
	}
	return b.String()
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
