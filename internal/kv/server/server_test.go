package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// startKV starts a server on a free port with its data in a temporary directory and returns it
// with a connected client; both are closed at cleanup.
func startKV(t testing.TB, opts ...func(*Config)) (*Server, *clientv3.Client) {
	t.Helper()
	s, cli, err := tryStartKV(t, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.Close()
		s.Close()
	})
	return s, cli
}

// testConfig is a one-member server on a free loopback port and a temporary data dir, with opts.
func testConfig(t testing.TB, opts ...func(*Config)) Config {
	cfg := DefaultConfig()
	cfg.Name = "test"
	cfg.DataDir = t.TempDir()
	cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// tryStartKV starts a server and a client of it; the caller closes both.
func tryStartKV(t testing.TB, opts ...func(*Config)) (*Server, *clientv3.Client, error) {
	t.Helper()
	s, err := Start(testConfig(t, opts...))
	if err != nil {
		return nil, nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{strings.TrimPrefix(s.ClientURLs()[0], "http://")},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, cli, nil
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestKVBasics(t *testing.T) {
	_, cli := startKV(t)
	ctx := ctxT(t)
	put, err := cli.Put(ctx, "foo", "bar")
	if err != nil {
		t.Fatal(err)
	}
	if put.Header.Revision != 2 || put.Header.RaftTerm != 1 || put.Header.MemberId == 0 || put.Header.ClusterId == 0 {
		t.Fatalf("header %+v", put.Header)
	}
	put, err = cli.Put(ctx, "foo", "baz", clientv3.WithPrevKV())
	if err != nil || string(put.PrevKv.Value) != "bar" || put.Header.Revision != 3 {
		t.Fatalf("put prev: %v %+v", err, put)
	}
	get, err := cli.Get(ctx, "foo")
	if err != nil {
		t.Fatal(err)
	}
	kv := get.Kvs[0]
	if string(kv.Value) != "baz" || kv.CreateRevision != 2 || kv.ModRevision != 3 || kv.Version != 2 {
		t.Fatalf("get %+v", kv)
	}
	old, err := cli.Get(ctx, "foo", clientv3.WithRev(2))
	if err != nil || string(old.Kvs[0].Value) != "bar" || old.Header.Revision != 3 {
		t.Fatalf("get rev 1: %v %+v", err, old)
	}
	del, err := cli.Delete(ctx, "foo", clientv3.WithPrevKV())
	if err != nil || del.Deleted != 1 || string(del.PrevKvs[0].Value) != "baz" || del.Header.Revision != 4 {
		t.Fatalf("delete: %v %+v", err, del)
	}
	// A delete of nothing does not bump the revision.
	del, err = cli.Delete(ctx, "foo")
	if err != nil || del.Deleted != 0 || del.Header.Revision != 4 {
		t.Fatalf("empty delete: %v %+v", err, del)
	}
	// Recreating resets version and create revision.
	if _, err := cli.Put(ctx, "foo", "again"); err != nil {
		t.Fatal(err)
	}
	get, _ = cli.Get(ctx, "foo")
	if kv := get.Kvs[0]; kv.CreateRevision != 5 || kv.Version != 1 {
		t.Fatalf("recreated %+v", kv)
	}
}

func TestRangeOptions(t *testing.T) {
	_, cli := startKV(t)
	ctx := ctxT(t)
	for i, k := range []string{"a", "b/1", "b/2", "b/3", "c"} {
		if _, err := cli.Put(ctx, k, fmt.Sprint(5-i)); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(r *clientv3.GetResponse) string {
		var ks []string
		for _, kv := range r.Kvs {
			ks = append(ks, string(kv.Key)+"="+string(kv.Value))
		}
		return strings.Join(ks, ",")
	}
	tests := []struct {
		name      string
		key       string
		opts      []clientv3.OpOption
		want      string
		count     int64
		more      bool
		wantError error
	}{
		{"single", "a", nil, "a=5", 1, false, nil},
		{"missing", "zz", nil, "", 0, false, nil},
		{"prefix", "b/", []clientv3.OpOption{clientv3.WithPrefix()}, "b/1=4,b/2=3,b/3=2", 3, false, nil},
		{"range", "a", []clientv3.OpOption{clientv3.WithRange("b/3")}, "a=5,b/1=4,b/2=3", 3, false, nil},
		{"from key", "b/3", []clientv3.OpOption{clientv3.WithFromKey()}, "b/3=2,c=1", 2, false, nil},
		{"all", "\x00", []clientv3.OpOption{clientv3.WithFromKey()}, "a=5,b/1=4,b/2=3,b/3=2,c=1", 5, false, nil},
		{"limit", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithLimit(2)}, "a=5,b/1=4", 5, true, nil},
		{"limit exact", "b/", []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithLimit(3)}, "b/1=4,b/2=3,b/3=2", 3, false, nil},
		{"sort value asc", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithSort(clientv3.SortByValue, clientv3.SortAscend)}, "c=1,b/3=2,b/2=3,b/1=4,a=5", 5, false, nil},
		{"sort key desc limit", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(2)}, "c=1,b/3=2", 5, true, nil},
		{"min mod", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMinModRev(5)}, "b/3=2,c=1", 5, false, nil},
		{"max create", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithMaxCreateRev(3)}, "a=5,b/1=4", 5, false, nil},
		{"at rev", "\x00", []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithRev(3)}, "a=5,b/1=4", 2, false, nil},
		{"keys only", "a", []clientv3.OpOption{clientv3.WithKeysOnly()}, "a=", 1, false, nil},
		{"serializable", "a", []clientv3.OpOption{clientv3.WithSerializable()}, "a=5", 1, false, nil},
		{"future", "a", []clientv3.OpOption{clientv3.WithRev(100)}, "", 0, false, rpctypes.ErrFutureRev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := cli.Get(ctx, tt.key, tt.opts...)
			if tt.wantError != nil {
				if !errors.Is(err, tt.wantError) {
					t.Fatalf("err = %v, want %v", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(r); got != tt.want || r.Count != tt.count || r.More != tt.more {
				t.Fatalf("got %q count %d more %v; want %q count %d more %v", got, r.Count, r.More, tt.want, tt.count, tt.more)
			}
		})
	}
	cnt, err := cli.Get(ctx, "b/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || cnt.Count != 3 || len(cnt.Kvs) != 0 {
		t.Fatalf("count only: %v %+v", err, cnt)
	}
}

func TestTxn(t *testing.T) {
	_, cli := startKV(t)
	ctx := ctxT(t)
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cmp     clientv3.Cmp
		succeed bool
	}{
		{"mod equal", clientv3.Compare(clientv3.ModRevision("k"), "=", 2), true},
		{"mod missing = 0", clientv3.Compare(clientv3.ModRevision("nokey"), "=", 0), true},
		{"version greater", clientv3.Compare(clientv3.Version("k"), ">", 0), true},
		{"create less", clientv3.Compare(clientv3.CreateRevision("k"), "<", 2), false},
		{"value equal", clientv3.Compare(clientv3.Value("k"), "=", "v"), true},
		{"value not equal", clientv3.Compare(clientv3.Value("k"), "!=", "x"), true},
		{"value on missing fails", clientv3.Compare(clientv3.Value("nokey"), "!=", "x"), false},
		{"lease equal 0", clientv3.Compare(clientv3.LeaseValue("k"), "=", 0), true},
		{"prefix versions", clientv3.Compare(clientv3.Version("k"), ">", 0).WithPrefix(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := cli.Txn(ctx).If(tt.cmp).Then(clientv3.OpGet("k")).Commit()
			if err != nil {
				t.Fatal(err)
			}
			if r.Succeeded != tt.succeed {
				t.Fatalf("succeeded = %v", r.Succeeded)
			}
		})
	}
	// A write txn gets one revision; reads inside see earlier writes of the same txn.
	r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("k"), "=", 1)).
		Then(clientv3.OpPut("a", "1"), clientv3.OpPut("b", "2"), clientv3.OpGet("a"),
			clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpDelete("k")}, nil)).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if !r.Succeeded || r.Header.Revision != 3 {
		t.Fatalf("txn %+v", r)
	}
	if g := r.Responses[2].GetResponseRange(); len(g.Kvs) != 1 || g.Kvs[0].ModRevision != 3 {
		t.Fatalf("txn read own write: %+v", g)
	}
	// A read-only txn does not bump the revision.
	r, err = cli.Txn(ctx).Then(clientv3.OpGet("a")).Commit()
	if err != nil || r.Header.Revision != 3 {
		t.Fatalf("read txn %v %+v", err, r)
	}
	// A write txn taking a branch without writes does not bump it either.
	r, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("a"), "=", 7)).Then(clientv3.OpPut("a", "x")).Else(clientv3.OpGet("a")).Commit()
	if err != nil || r.Succeeded || r.Header.Revision != 3 {
		t.Fatalf("else txn %v %+v", err, r)
	}
}

func TestBadInput(t *testing.T) {
	_, cli := startKV(t, func(c *Config) { c.MaxRequestBytes = 1024 })
	ctx := ctxT(t)
	many := make([]clientv3.Op, 129)
	for i := range many {
		many[i] = clientv3.OpPut(fmt.Sprint(i), "v")
	}
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"empty key put", func() error { _, err := cli.Put(ctx, "", "v"); return err }, rpctypes.ErrEmptyKey},
		{"empty key get", func() error { _, err := cli.Get(ctx, ""); return err }, rpctypes.ErrEmptyKey},
		{"too large", func() error { _, err := cli.Put(ctx, "k", strings.Repeat("x", 2048)); return err }, rpctypes.ErrRequestTooLarge},
		{"too many ops", func() error { _, err := cli.Txn(ctx).Then(many...).Commit(); return err }, rpctypes.ErrTooManyOps},
		{"duplicate key", func() error {
			_, err := cli.Txn(ctx).Then(clientv3.OpPut("a", "1"), clientv3.OpPut("a", "2")).Commit()
			return err
		}, rpctypes.ErrDuplicateKey},
		{"put in deleted range", func() error {
			_, err := cli.Txn(ctx).Then(clientv3.OpDelete("a", clientv3.WithPrefix()), clientv3.OpPut("ab", "2")).Commit()
			return err
		}, rpctypes.ErrDuplicateKey},
		{"unknown lease", func() error { _, err := cli.Put(ctx, "k", "v", clientv3.WithLease(12345)); return err }, rpctypes.ErrLeaseNotFound},
		{"ignore value missing key", func() error { _, err := cli.Put(ctx, "nokey", "", clientv3.WithIgnoreValue()); return err }, rpctypes.ErrKeyNotFound},
		{"ignore value with value", func() error { _, err := cli.Put(ctx, "nokey", "x", clientv3.WithIgnoreValue()); return err }, rpctypes.ErrValueProvided},
		{"compact future", func() error { _, err := cli.Compact(ctx, 1000); return err }, rpctypes.ErrFutureRev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// The server keeps serving.
	if _, err := cli.Put(ctx, "ok", "v"); err != nil {
		t.Fatal(err)
	}
	// Then/else may put the same key.
	if _, err := cli.Txn(ctx).Then(clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("x", "1")}, []clientv3.Op{clientv3.OpPut("x", "2")})).Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestCompaction(t *testing.T) {
	_, cli := startKV(t)
	ctx := ctxT(t)
	for i := range 10 {
		if _, err := cli.Put(ctx, "k", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "gone", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, 6, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get(ctx, "k", clientv3.WithRev(5)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("read below compaction: %v", err)
	}
	r, err := cli.Get(ctx, "k", clientv3.WithRev(6))
	if err != nil || string(r.Kvs[0].Value) != "4" {
		t.Fatalf("read at compaction: %v %+v", err, r)
	}
	if _, err := cli.Compact(ctx, 6); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("compact again: %v", err)
	}
	if _, err := cli.Compact(ctx, 13, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	r, err = cli.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "9" {
		t.Fatalf("after compaction: %v %+v", err, r)
	}
}

func TestStatusMembersAuth(t *testing.T) {
	s, cli := startKV(t)
	ctx := ctxT(t)
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	ep := strings.TrimPrefix(s.ClientURLs()[0], "http://")
	st, err := cli.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != Version || st.Header.Revision != 2 || st.Leader != st.Header.MemberId || st.DbSize <= 0 {
		t.Fatalf("status %+v", st)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 1 || ml.Members[0].Name != "test" || ml.Members[0].ClientURLs[0] != s.ClientURLs()[0] {
		t.Fatalf("member list %v %+v", err, ml)
	}
	if _, err := cli.Defragment(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if as, err := cli.AuthStatus(ctx); err != nil || as.Enabled || as.AuthRevision != 1 {
		t.Fatalf("auth status: %v %+v, want disabled at revision 1", err, as)
	}
	// etcd calls with no counterpart here say so, and why.
	for name, call := range map[string]func() error{
		"move leader":    func() error { _, err := cli.MoveLeader(ctx, 1); return err },
		"member promote": func() error { _, err := cli.MemberPromote(ctx, 1); return err },
		"member update":  func() error { _, err := cli.MemberUpdate(ctx, 1, []string{"http://127.0.0.1:1"}); return err },
	} {
		if err := call(); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), name+" is not supported: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	s, cli := startKV(t, func(c *Config) { c.DataDir = dir })
	ctx := ctxT(t)
	for i := range 5 {
		if _, err := cli.Put(ctx, fmt.Sprint("k", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Compact(ctx, 4, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	s.Close()
	_, cli = startKV(t, func(c *Config) { c.DataDir = dir })
	r, err := cli.Get(ctx, "k", clientv3.WithPrefix())
	if err != nil || r.Count != 5 || r.Header.Revision != 6 {
		t.Fatalf("after restart: %v %+v", err, r)
	}
	if _, err := cli.Get(ctx, "k0", clientv3.WithRev(3)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("compaction survives restart: %v", err)
	}
	p, err := cli.Put(ctx, "k0", "w")
	if err != nil || p.Header.Revision != 7 {
		t.Fatalf("put after restart %v %+v", err, p)
	}
}

func ctxWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
