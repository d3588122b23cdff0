package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// fastAuth keeps bcrypt cheap in tests that are not about bcrypt.
func fastAuth(c *Config) { c.BcryptCost = bcrypt.MinCost }

func userClient(t testing.TB, s *Server, user, password string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{strings.TrimPrefix(s.ClientURLs()[0], "http://")},
		DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		Username: user, Password: password,
	})
	if err != nil {
		t.Fatalf("client as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// must(call(...))(t) fails t if the call failed, and returns its value.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// wantErr checks that err is etcd's rpctypes error want (as clientv3 hands it back).
func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, rpctypes.Error(want)) && (err == nil || rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(want)) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// enableRoot adds root (with the root role) and enables auth, as `etcdctl auth enable` after
// `user add root` does.
func enableRoot(t testing.TB, cli *clientv3.Client) {
	t.Helper()
	ctx := ctxT(t)
	must(cli.UserAdd(ctx, "root", "rootpw"))(t)
	must(cli.UserGrantRole(ctx, "root", "root"))(t)
	must(cli.AuthEnable(ctx))(t)
}

func TestCovers(t *testing.T) {
	perms := func(ps ...keySpan) []keySpan {
		sort.Slice(ps, func(i, j int) bool { return string(ps[i].start) < string(ps[j].start) })
		return ps
	}
	pt := func(k string) keySpan { return permSpan([]byte(k), nil) }
	rg := func(k, e string) keySpan { return permSpan([]byte(k), []byte(e)) }
	from := func(k string) keySpan { return permSpan([]byte(k), []byte{0}) }
	cases := []struct {
		name  string
		have  []keySpan
		want  keySpan
		allow bool
	}{
		{"point in point", perms(pt("a")), pt("a"), true},
		{"other point", perms(pt("a")), pt("b"), false},
		{"point's successor", perms(pt("a")), pt("a\x00"), false},
		{"point in range", perms(rg("a", "c")), pt("b"), true},
		{"range end excluded", perms(rg("a", "c")), pt("c"), false},
		{"range in range", perms(rg("a", "d")), rg("b", "c"), true},
		{"range beyond", perms(rg("a", "c")), rg("b", "d"), false},
		{"union of ranges", perms(rg("a", "c"), rg("c", "e")), rg("a", "e"), true},
		{"gap in union", perms(rg("a", "c"), rg("d", "e")), rg("a", "e"), false},
		{"overlapping out of order", perms(rg("b", "f"), rg("a", "c")), rg("a", "e"), true},
		{"from key covers open", perms(from("k")), from("k"), true},
		{"from key covers above", perms(from("k")), rg("x", "z"), true},
		{"from key not below", perms(from("k")), pt("j"), false},
		{"range does not cover open", perms(rg("a", "z")), from("b"), false},
		{"prefix a/", perms(rg("a/", "a0")), pt("a/x"), true},
		{"prefix a/ not a", perms(rg("a/", "a0")), pt("a"), false},
		{"empty", nil, pt("a"), false},
	}
	for _, c := range cases {
		if got := covers(c.have, c.want); got != c.allow {
			t.Errorf("%s: covers = %v, want %v", c.name, got, c.allow)
		}
		// A single key's span ends at its successor: holds must agree with covers.
		if k := c.want.start; c.want.end != nil && string(c.want.end) == string(k)+"\x00" {
			if got := holds(c.have, k); got != c.allow {
				t.Errorf("%s: holds = %v, want %v", c.name, got, c.allow)
			}
		}
	}
}

// TestAuthStoreRules: etcd's rules for root, duplicate names, revisions and persistence.
func TestAuthStoreRules(t *testing.T) {
	dir := t.TempDir()
	s, cli := startKV(t, fastAuth, func(c *Config) { c.DataDir = dir })
	ctx := ctxT(t)
	st := must(cli.AuthStatus(ctx))(t)
	if st.Enabled || st.AuthRevision != 1 {
		t.Fatalf("fresh auth status %+v, want disabled at revision 1", st)
	}
	_, err := cli.AuthEnable(ctx)
	wantErr(t, "enable without root", err, rpctypes.ErrGRPCRootUserNotExist)
	must(cli.UserAdd(ctx, "root", "rootpw"))(t)
	_, err = cli.AuthEnable(ctx)
	wantErr(t, "enable without root role", err, rpctypes.ErrGRPCRootRoleNotExist)
	_, err = cli.UserAdd(ctx, "root", "x")
	wantErr(t, "duplicate user", err, rpctypes.ErrGRPCUserAlreadyExist)
	_, err = cli.UserAdd(ctx, "", "x")
	wantErr(t, "empty user", err, rpctypes.ErrGRPCUserEmpty)
	_, err = cli.RoleAdd(ctx, "")
	wantErr(t, "empty role", err, rpctypes.ErrGRPCRoleEmpty)
	_, err = cli.UserGrantRole(ctx, "root", "nope")
	wantErr(t, "grant unknown role", err, rpctypes.ErrGRPCRoleNotFound)
	_, err = cli.UserGrantRole(ctx, "nobody", "root")
	wantErr(t, "grant to unknown user", err, rpctypes.ErrGRPCUserNotFound)
	must(cli.UserGrantRole(ctx, "root", "root"))(t) // the root role needs no definition
	rev := must(cli.AuthStatus(ctx))(t).AuthRevision
	must(cli.UserGrantRole(ctx, "root", "root"))(t)
	if r := must(cli.AuthStatus(ctx))(t).AuthRevision; r != rev {
		t.Errorf("duplicate grant moved the revision %d -> %d", rev, r)
	}
	must(cli.RoleAdd(ctx, "r"))(t)
	_, err = cli.RoleAdd(ctx, "r")
	wantErr(t, "duplicate role", err, rpctypes.ErrGRPCRoleAlreadyExist)
	_, err = cli.RoleGrantPermission(ctx, "r", "", "", clientv3.PermissionType(authpb.READ))
	wantErr(t, "permission without key", err, rpctypes.ErrGRPCInvalidAuthMgmt)
	_, err = cli.RoleGrantPermission(ctx, "r", "b", "a", clientv3.PermissionType(authpb.READ))
	wantErr(t, "permission with end before key", err, rpctypes.ErrGRPCInvalidAuthMgmt)
	must(cli.RoleGrantPermission(ctx, "r", "k", "", clientv3.PermissionType(authpb.READ)))(t)
	must(cli.RoleGrantPermission(ctx, "r", "k", "", clientv3.PermissionType(authpb.READWRITE)))(t) // replaces
	must(cli.RoleGrantPermission(ctx, "r", "a", "\x00", clientv3.PermissionType(authpb.WRITE)))(t)
	rg := must(cli.RoleGet(ctx, "r"))(t)
	if len(rg.Perm) != 2 || string(rg.Perm[0].Key) != "a" || string(rg.Perm[1].Key) != "k" || rg.Perm[1].PermType != authpb.READWRITE {
		t.Errorf("role r: %v, want a (write, from key) then k (readwrite)", rg.Perm)
	}
	_, err = cli.RoleRevokePermission(ctx, "r", "zz", "")
	wantErr(t, "revoke missing permission", err, rpctypes.ErrGRPCPermissionNotGranted)
	_, err = cli.UserRevokeRole(ctx, "root", "r")
	wantErr(t, "revoke role not held", err, rpctypes.ErrGRPCRoleNotGranted)
	must(cli.AuthEnable(ctx))(t)

	root := userClient(t, s, "root", "rootpw")
	_, err = root.UserDelete(ctx, "root")
	wantErr(t, "delete root while enabled", err, rpctypes.ErrGRPCInvalidAuthMgmt)
	_, err = root.UserRevokeRole(ctx, "root", "root")
	wantErr(t, "root loses root role while enabled", err, rpctypes.ErrGRPCInvalidAuthMgmt)
	_, err = root.RoleDelete(ctx, "root")
	wantErr(t, "delete root role while enabled", err, rpctypes.ErrGRPCInvalidAuthMgmt)
	_, err = cli.UserList(ctx)
	wantErr(t, "user list without a user", err, rpctypes.ErrGRPCUserEmpty)
	before := must(root.AuthStatus(ctx))(t)
	if !before.Enabled {
		t.Fatal("auth not enabled")
	}

	// Everything survives a restart.
	s.Close()
	s2, _ := startKV(t, fastAuth, func(c *Config) { c.DataDir = dir })
	root2 := userClient(t, s2, "root", "rootpw")
	after := must(root2.AuthStatus(ctx))(t)
	if !after.Enabled || after.AuthRevision != before.AuthRevision {
		t.Fatalf("after restart %+v, before %+v", after, before)
	}
	if users := must(root2.UserList(ctx))(t).Users; strings.Join(users, ",") != "root" {
		t.Errorf("users after restart %v", users)
	}
	if rg := must(root2.RoleGet(ctx, "r"))(t); len(rg.Perm) != 2 {
		t.Errorf("role r after restart %v", rg.Perm)
	}
	if c, err := clientv3.New(clientv3.Config{Endpoints: []string{strings.TrimPrefix(s2.ClientURLs()[0], "http://")},
		DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Username: "root", Password: "wrong"}); err == nil {
		c.Close()
		t.Error("wrong password accepted after restart")
	} else {
		wantErr(t, "wrong password after restart", err, rpctypes.ErrGRPCAuthFailed)
	}
	must(root2.AuthDisable(ctx))(t)
	if st := must(root2.AuthStatus(ctx))(t); st.Enabled || st.AuthRevision != before.AuthRevision+1 {
		t.Errorf("after disable %+v", st)
	}
}

// TestAuthPermissions: the checks of each request type, as etcd makes them.
func TestAuthPermissions(t *testing.T) {
	s, cli := startKV(t, fastAuth)
	ctx := ctxT(t)
	must(cli.Put(ctx, "p/1", "v"))(t)
	must(cli.Put(ctx, "q", "v"))(t)
	lease := must(cli.Grant(ctx, 60))(t)
	must(cli.Put(ctx, "p/leased", "v", clientv3.WithLease(lease.ID)))(t)
	leaseQ := must(cli.Grant(ctx, 60))(t)
	must(cli.Put(ctx, "q", "v", clientv3.WithLease(leaseQ.ID)))(t)
	must(cli.UserAdd(ctx, "u", "upw"))(t)
	must(cli.RoleAdd(ctx, "pw"))(t)
	must(cli.RoleAdd(ctx, "qr"))(t)
	must(cli.RoleGrantPermission(ctx, "pw", "p/", clientv3.GetPrefixRangeEnd("p/"), clientv3.PermissionType(authpb.READWRITE)))(t)
	must(cli.RoleGrantPermission(ctx, "qr", "q", "", clientv3.PermissionType(authpb.READ)))(t)
	must(cli.UserGrantRole(ctx, "u", "pw"))(t)
	must(cli.UserGrantRole(ctx, "u", "qr"))(t)
	enableRoot(t, cli)
	u := userClient(t, s, "u", "upw")
	root := userClient(t, s, "root", "rootpw")
	ep := strings.TrimPrefix(s.ClientURLs()[0], "http://")

	deny := rpctypes.ErrGRPCPermissionDenied
	for _, c := range []struct {
		name string
		call func() error
		want error // nil: allowed
	}{
		{"get in prefix", func() error { _, err := u.Get(ctx, "p/1"); return err }, nil},
		{"get prefix", func() error { _, err := u.Get(ctx, "p/", clientv3.WithPrefix()); return err }, nil},
		{"get readable key", func() error { _, err := u.Get(ctx, "q"); return err }, nil},
		{"get range beyond", func() error { _, err := u.Get(ctx, "p/", clientv3.WithRange("r")); return err }, deny},
		{"get from key", func() error { _, err := u.Get(ctx, "p/", clientv3.WithFromKey()); return err }, deny},
		{"put in prefix", func() error { _, err := u.Put(ctx, "p/2", "v"); return err }, nil},
		{"put read-only key", func() error { _, err := u.Put(ctx, "q", "v"); return err }, deny},
		{"put outside", func() error { _, err := u.Put(ctx, "x", "v"); return err }, deny},
		{"delete in prefix", func() error { _, err := u.Delete(ctx, "p/2", clientv3.WithPrevKV()); return err }, nil},
		{"delete read-only", func() error { _, err := u.Delete(ctx, "q"); return err }, deny},
		{"txn compare readable, ops allowed", func() error {
			_, err := u.Txn(ctx).If(clientv3.Compare(clientv3.Version("q"), ">", 0)).Then(clientv3.OpPut("p/3", "v")).Commit()
			return err
		}, nil},
		{"txn else branch writes read-only key", func() error {
			_, err := u.Txn(ctx).If(clientv3.Compare(clientv3.Version("q"), ">", 0)).Then(clientv3.OpGet("q")).Else(clientv3.OpPut("q", "w")).Commit()
			return err
		}, deny},
		{"txn compare on unreadable key", func() error {
			_, err := u.Txn(ctx).If(clientv3.Compare(clientv3.Version("x"), "=", 0)).Commit()
			return err
		}, deny},
		{"txn nested", func() error {
			_, err := u.Txn(ctx).Then(clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpDelete("x")}, nil)).Commit()
			return err
		}, deny},
		{"put attaching a lease with unwritable keys", func() error {
			_, err := u.Put(ctx, "p/4", "v", clientv3.WithLease(leaseQ.ID))
			return err
		}, deny},
		{"revoke lease of writable keys", func() error { _, err := u.Revoke(ctx, lease.ID); return err }, nil},
		{"revoke lease of unwritable key", func() error { _, err := u.Revoke(ctx, leaseQ.ID); return err }, deny},
		{"compact", func() error { _, err := u.Compact(ctx, 1); return err }, deny},
		{"defragment", func() error { _, err := u.Defragment(ctx, ep); return err }, deny},
		{"hashkv", func() error { _, err := u.HashKV(ctx, ep, 0); return err }, deny},
		{"alarm disarm", func() error {
			_, err := u.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: 1, Alarm: pb.AlarmType_NOSPACE})
			return err
		}, deny},
		{"alarm list", func() error { _, err := u.AlarmList(ctx); return err }, nil},
		{"status", func() error { _, err := u.Status(ctx, ep); return err }, nil},
		{"member add", func() error { _, err := u.MemberAdd(ctx, []string{"http://127.0.0.1:1"}); return err }, deny},
		{"user list", func() error { _, err := u.UserList(ctx); return err }, deny},
		{"user get self", func() error { _, err := u.UserGet(ctx, "u"); return err }, nil},
		{"user get other", func() error { _, err := u.UserGet(ctx, "root"); return err }, deny},
		{"role get held", func() error { _, err := u.RoleGet(ctx, "pw"); return err }, nil},
		{"auth disable", func() error { _, err := u.AuthDisable(ctx); return err }, deny},
		{"anonymous get", func() error { _, err := cli.Get(ctx, "p/1"); return err }, rpctypes.ErrGRPCUserEmpty},
		{"anonymous status", func() error { _, err := cli.Status(ctx, ep); return err }, rpctypes.ErrGRPCUserEmpty},
		{"root anything", func() error { _, err := root.Put(ctx, "x", "v"); return err }, nil},
		{"root compact", func() error { _, err := root.Compact(ctx, 2); return err }, nil},
	} {
		err := c.call()
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want allowed", c.name, err)
			}
			continue
		}
		wantErr(t, c.name, err, c.want)
	}

	// Watch: checked at creation; a refused watch is cancelled with etcd's reason.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ok := u.Watch(wctx, "p/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if r := <-ok; r.Canceled || !r.Created {
		t.Fatalf("watch on p/: %+v", r)
	}
	refused := u.Watch(wctx, "x")
	r, open := <-refused
	if !open || !r.Canceled || !strings.Contains(r.Err().Error(), "permission denied") {
		t.Fatalf("watch on x: %+v (%v)", r, r.Err())
	}

	// A permission revoked: the user's next request is refused.
	must(root.RoleRevokePermission(ctx, "pw", "p/", clientv3.GetPrefixRangeEnd("p/")))(t)
	_, err := u.Put(ctx, "p/5", "v")
	wantErr(t, "put after revoke", err, deny)
}

// TestAuthTokens: bad tokens, simple tokens' idle expiry, password change, and JWT with RSA
// and ECDSA keys (including a stale revision, which clientv3 answers by authenticating again).
func TestAuthTokens(t *testing.T) {
	t.Run("simple", func(t *testing.T) {
		s, cli := startKV(t, fastAuth)
		ctx := ctxT(t)
		enableRoot(t, cli)
		conn := pb.NewKVClient(rawConn(t, s))
		_, err := conn.Range(withToken(ctx, "forged.1"), &pb.RangeRequest{Key: []byte("k")})
		wantErr(t, "forged token", err, rpctypes.ErrGRPCInvalidAuthToken)
		ar := must(cli.Authenticate(ctx, "root", "rootpw"))(t)
		if parts := strings.Split(ar.Token, "."); len(parts) != 2 || len(parts[0]) != 16 {
			t.Fatalf("simple token %q, want 16 letters, a dot and an index", ar.Token)
		}
		must(conn.Range(withToken(ctx, ar.Token), &pb.RangeRequest{Key: []byte("k")}))(t)
		// Idle expiry, on the token provider's clock.
		st := s.auth.tokens.(*simpleTokens)
		st.mu.Lock()
		st.now = func() time.Time { return time.Now().Add(DefaultAuthTokenTTL + time.Second) }
		st.mu.Unlock()
		_, err = conn.Range(withToken(ctx, ar.Token), &pb.RangeRequest{Key: []byte("k")})
		wantErr(t, "expired token", err, rpctypes.ErrGRPCInvalidAuthToken)
		st.mu.Lock()
		st.now = time.Now
		st.mu.Unlock()
		// A password change invalidates the user's tokens.
		ar = must(cli.Authenticate(ctx, "root", "rootpw"))(t)
		must(conn.Range(withToken(ctx, ar.Token), &pb.RangeRequest{Key: []byte("k")}))(t)
		auth := pb.NewAuthClient(rawConn(t, s))
		must(auth.UserChangePassword(withToken(ctx, ar.Token), &pb.AuthUserChangePasswordRequest{Name: "root", Password: "new"}))(t)
		_, err = conn.Range(withToken(ctx, ar.Token), &pb.RangeRequest{Key: []byte("k")})
		wantErr(t, "token after password change", err, rpctypes.ErrGRPCInvalidAuthToken)
		_, err = cli.Authenticate(ctx, "root", "rootpw")
		wantErr(t, "old password", err, rpctypes.ErrGRPCAuthFailed)
		_, err = cli.Authenticate(ctx, "nobody", "x")
		wantErr(t, "unknown user", err, rpctypes.ErrGRPCAuthFailed)
	})
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run("jwt-"+alg, func(t *testing.T) {
			priv, pub := writeJWTKeys(t, alg)
			s, cli := startKV(t, fastAuth, func(c *Config) {
				c.AuthToken = "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=" + alg + ",ttl=1m"
			})
			ctx := ctxT(t)
			must(cli.UserAdd(ctx, "u", "upw"))(t)
			must(cli.RoleAdd(ctx, "r"))(t)
			must(cli.RoleGrantPermission(ctx, "r", "k", "", clientv3.PermissionType(authpb.READWRITE)))(t)
			must(cli.UserGrantRole(ctx, "u", "r"))(t)
			enableRoot(t, cli)
			ar := must(cli.Authenticate(ctx, "u", "upw"))(t)
			if strings.Count(ar.Token, ".") != 2 {
				t.Fatalf("jwt token %q", ar.Token)
			}
			conn := pb.NewKVClient(rawConn(t, s))
			must(conn.Put(withToken(ctx, ar.Token), &pb.PutRequest{Key: []byte("k"), Value: []byte("v")}))(t)
			tampered := ar.Token[:len(ar.Token)-4] + "AAAA"
			_, err := conn.Put(withToken(ctx, tampered), &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
			wantErr(t, "tampered jwt", err, rpctypes.ErrGRPCInvalidAuthToken)
			// Any auth change makes earlier tokens old.
			root := userClient(t, s, "root", "rootpw")
			must(root.RoleAdd(ctx, "other"))(t)
			_, err = conn.Put(withToken(ctx, ar.Token), &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
			wantErr(t, "jwt at an old revision", err, rpctypes.ErrGRPCAuthOldRevision)
			// clientv3 authenticates again and carries on.
			u := userClient(t, s, "u", "upw")
			must(u.Put(ctx, "k", "v2"))(t)
			must(root.RoleAdd(ctx, "another"))(t)
			must(u.Put(ctx, "k", "v3"))(t)
		})
	}
	t.Run("bad options", func(t *testing.T) {
		for _, opt := range []string{"bogus", "jwt", "jwt,sign-method=RS256", "jwt,priv-key=/nonexistent,sign-method=RS256", "jwt,sign-method=HS256,priv-key=x", "simple,ttl=1m", "jwt,ttl"} {
			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			cfg.AuthToken = opt
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--auth-token") {
				t.Errorf("--auth-token %q: %v, want an error naming the flag", opt, err)
			}
		}
	})
}

// rawConn is a gRPC connection to s without clientv3's interceptors, whose retries (with
// backoff) of a read refused for its token would only delay the error the test wants.
func rawConn(t testing.TB, s *Server) *grpc.ClientConn {
	t.Helper()
	c, err := grpc.NewClient(strings.TrimPrefix(s.ClientURLs()[0], "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func withToken(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, tok)
}

func writeJWTKeys(t *testing.T, alg string) (privFile, pubFile string) {
	t.Helper()
	var der, pubDER []byte
	var typ string
	var err error
	switch alg {
	case "RS256":
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		der, typ = x509.MarshalPKCS1PrivateKey(k), "RSA PRIVATE KEY"
		pubDER, err = x509.MarshalPKIXPublicKey(&k.PublicKey)
	case "ES256":
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err = x509.MarshalECPrivateKey(k)
		typ = "EC PRIVATE KEY"
		if err == nil {
			pubDER, err = x509.MarshalPKIXPublicKey(&k.PublicKey)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	privFile, pubFile = filepath.Join(dir, "priv.pem"), filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(privFile, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return privFile, pubFile
}

// TestAuthClientCertCN: with --client-cert-auth a verified certificate's common name is the
// user, without a token.
func TestAuthClientCertCN(t *testing.T) {
	dir := t.TempDir()
	caFile, _, ca, caKey := writeCert(t, dir, "ca", nil, nil)
	srvCert, srvKey, _, _ := writeCert(t, dir, "server", ca, caKey)
	rootCert, rootKey, _, _ := writeCert(t, dir, "root", ca, caKey)
	otherCert, otherKey, _, _ := writeCert(t, dir, "alice", ca, caKey)
	s := startKVNoClient(t, func(c *Config) {
		fastAuth(c)
		c.ListenClientURLs = []string{"https://127.0.0.1:0"}
		c.CertFile, c.KeyFile, c.TrustedCAFile, c.ClientCertAuth = srvCert, srvKey, caFile, true
	})
	ep := strings.TrimPrefix(s.ClientURLs()[0], "https://")
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	client := func(cert, key string) *clientv3.Client {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	root, alice := client(rootCert, rootKey), client(otherCert, otherKey)
	ctx := ctxT(t)
	must(root.UserAddWithOptions(ctx, "alice", "", &clientv3.UserAddOptions{NoPassword: true}))(t)
	enableRoot(t, root)
	must(root.Put(ctx, "k", "v"))(t) // the certificate's CN "root" is the root user
	_, err := alice.Put(ctx, "k", "v")
	wantErr(t, "alice without permission", err, rpctypes.ErrGRPCPermissionDenied)
	must(root.RoleAdd(ctx, "kw"))(t)
	must(root.RoleGrantPermission(ctx, "kw", "k", "", clientv3.PermissionType(authpb.WRITE)))(t)
	must(root.UserGrantRole(ctx, "alice", "kw"))(t)
	must(alice.Put(ctx, "k", "v"))(t)
	_, err = alice.Authenticate(ctx, "alice", "")
	if err == nil || !strings.Contains(err.Error(), "password was given for no password user") {
		t.Errorf("password login of a no-password user: %v", err)
	}
}

// startKVNoClient starts a server without the plain-text client of startKV.
func startKVNoClient(t testing.TB, opts ...func(*Config)) *Server {
	t.Helper()
	s, err := Start(testConfig(t, opts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAuthTimingUnknownUserVsWrongPassword: an unknown user must cost the same bcrypt work as
// a wrong password, or the answer time tells which names exist. Medians of interleaved tries
// must be within a factor of 2 of each other (etcd itself answers an unknown user without
// hashing, about 100 times faster at its default cost; this bound catches that).
func TestAuthTimingUnknownUserVsWrongPassword(t *testing.T) {
	// bcrypt cost 8: a quarter of the default's work, still far above a request's own cost.
	_, cli := startKV(t, func(c *Config) { c.BcryptCost = 8 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(cli.UserAdd(ctx, "root", "rootpw"))(t)
	must(cli.UserGrantRole(ctx, "root", "root"))(t)
	must(cli.AuthEnable(ctx))(t)
	auth := pb.NewAuthClient(cli.ActiveConnection())
	n := 11
	if testing.Short() {
		n = 5
	}
	var unknown, wrong []time.Duration
	for i := 0; i < n; i++ {
		for _, c := range []struct {
			name string
			into *[]time.Duration
		}{{"nobody", &unknown}, {"root", &wrong}} {
			start := time.Now()
			_, err := auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: c.name, Password: "guess"})
			*c.into = append(*c.into, time.Since(start))
			wantErr(t, "authenticate "+c.name, err, rpctypes.ErrGRPCAuthFailed)
		}
	}
	mu, mw := median(unknown), median(wrong)
	ratio := float64(mu) / float64(mw)
	t.Logf("median authenticate: unknown user %v, wrong password %v (ratio %.2f)", mu, mw, ratio)
	if ratio < 0.5 || ratio > 2 {
		t.Errorf("unknown user takes %v, wrong password %v: ratio %.2f outside [0.5, 2]", mu, mw, ratio)
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
