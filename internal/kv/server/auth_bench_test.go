package server

import (
	"strconv"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// BenchmarkPutAuth measures a Put through gRPC with auth off, on as root (no key check), and
// on as a user whose permission is one prefix among 20 roles' worth of others (a token lookup
// and a key check). Compare medians of -count runs, in one run:
//
//	go test -run '^$' -bench BenchmarkPutAuth -count 6 ./internal/kv/server/
func BenchmarkPutAuth(b *testing.B) {
	for _, mode := range []string{"off", "root", "user"} {
		b.Run(mode, func(b *testing.B) {
			s, cli := startKV(b, fastAuth, func(c *Config) { c.Fsync = mvcc.FsyncNever })
			ctx := ctxT(b)
			c := cli
			if mode != "off" {
				for i := 0; i < 20; i++ {
					r := "r" + strconv.Itoa(i)
					must(cli.RoleAdd(ctx, r))(b)
					must(cli.RoleGrantPermission(ctx, r, "other"+strconv.Itoa(i)+"/", clientv3.GetPrefixRangeEnd("other"+strconv.Itoa(i)+"/"), clientv3.PermissionType(authpb.READWRITE)))(b)
					must(cli.UserAdd(ctx, "u"+strconv.Itoa(i), "pw"))(b)
					must(cli.UserGrantRole(ctx, "u"+strconv.Itoa(i), r))(b)
				}
				must(cli.RoleAdd(ctx, "bench"))(b)
				must(cli.RoleGrantPermission(ctx, "bench", "bench/", clientv3.GetPrefixRangeEnd("bench/"), clientv3.PermissionType(authpb.READWRITE)))(b)
				must(cli.UserAdd(ctx, "bench", "pw"))(b)
				must(cli.UserGrantRole(ctx, "bench", "bench"))(b)
				enableRoot(b, cli)
				if mode == "root" {
					c = userClient(b, s, "root", "rootpw")
				} else {
					c = userClient(b, s, "bench", "pw")
				}
			}
			val := string(make([]byte, 256))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Put(ctx, "bench/"+strconv.Itoa(i%1000), val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckPut measures the permission check alone (no gRPC, no store): auth off (one
// atomic load), and on for a user with a simple token (token lookup, merged-permission walk).
//
//	go test -run '^$' -bench BenchmarkCheckPut -count 6 ./internal/kv/server/
func BenchmarkCheckPut(b *testing.B) {
	for _, mode := range []string{"off", "user"} {
		b.Run(mode, func(b *testing.B) {
			s, cli := startKV(b, fastAuth)
			ctx := ctxT(b)
			in := ctx
			if mode == "user" {
				for i := 0; i < 20; i++ {
					r := "r" + strconv.Itoa(i)
					must(cli.RoleAdd(ctx, r))(b)
					must(cli.RoleGrantPermission(ctx, r, "other"+strconv.Itoa(i)+"/", clientv3.GetPrefixRangeEnd("other"+strconv.Itoa(i)+"/"), clientv3.PermissionType(authpb.READWRITE)))(b)
				}
				must(cli.RoleGrantPermission(ctx, "r7", "bench/", clientv3.GetPrefixRangeEnd("bench/"), clientv3.PermissionType(authpb.READWRITE)))(b)
				must(cli.UserAdd(ctx, "bench", "pw"))(b)
				for i := 0; i < 20; i++ {
					must(cli.UserGrantRole(ctx, "bench", "r"+strconv.Itoa(i)))(b)
				}
				enableRoot(b, cli)
				tok := must(cli.Authenticate(ctx, "bench", "pw"))(b).Token
				in = metadata.NewIncomingContext(ctx, metadata.Pairs(rpctypes.TokenFieldNameGRPC, tok))
			}
			req := &pb.PutRequest{Key: []byte("bench/key"), Value: []byte("v")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.checkPut(in, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
