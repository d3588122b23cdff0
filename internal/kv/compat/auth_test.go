package compat

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/procstat"
	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"
)

// ctlAuthScript is the etcdctl sequence of the auth suite: users, roles, permissions (one
// key, --prefix, --from-key), auth enable, requests as users (allowed and denied), password
// change, revocations, auth disable. It runs on a fresh member, so revisions agree.
var ctlAuthScript = []ctlStep{
	{args: []string{"auth", "status"}, want: "Authentication Status: false\nAuthRevision: 1"},
	{args: []string{"auth", "enable"}, want: "root user does not exist"},
	{args: []string{"user", "add", "root", "--new-user-password=rootpw"}, want: "User root created"},
	{args: []string{"user", "add", "root", "--new-user-password=x"}, want: "user name already exists"},
	{args: []string{"role", "add", "r1"}, want: "Role r1 created"},
	{args: []string{"role", "add", "r1"}, want: "role name already exists"},
	{args: []string{"role", "grant-permission", "r1", "readwrite", "k1"}, want: "Role r1 updated"},
	{args: []string{"role", "grant-permission", "r1", "read", "p/", "--prefix"}},
	{args: []string{"role", "grant-permission", "r1", "write", "x", "--from-key"}},
	{args: []string{"role", "grant-permission", "r1", "read", "m", "n"}},
	{args: []string{"role", "grant-permission", "r1", "read", "n", "m"}, want: "invalid auth management"},
	{args: []string{"role", "grant-permission", "nope", "read", "k"}, want: "role name not found"},
	{args: []string{"role", "get", "r1"}, want: "Role r1\nKV Read:\n"},
	{args: []string{"role", "get", "r1", "-w", "json"}},
	{args: []string{"role", "list"}, want: "r1"},
	{args: []string{"user", "add", "alice", "--new-user-password=alicepw"}, want: "User alice created"},
	{args: []string{"user", "grant-role", "alice", "r1"}, want: "Role r1 is granted to user alice"},
	{args: []string{"user", "grant-role", "alice", "nope"}, want: "role name not found"},
	{args: []string{"user", "get", "alice"}, want: "User: alice\nRoles: r1"},
	{args: []string{"user", "get", "alice", "--detail"}},
	{args: []string{"user", "list"}, want: "alice\nroot"},
	{args: []string{"user", "revoke-role", "alice", "nope"}, want: "role is not granted to the user"},
	{args: []string{"auth", "status", "-w", "json"}},
	{args: []string{"auth", "enable"}, want: "Authentication Enabled"},
	{args: []string{"auth", "status"}, want: "user name is empty"},
	{args: []string{"auth", "status", "--user", "root:rootpw"}, want: "Authentication Status: true"},
	{args: []string{"put", "k1", "v1", "--user", "alice:alicepw"}, want: "OK"},
	{args: []string{"get", "k1", "--user", "alice:alicepw"}, want: "k1\nv1"},
	{args: []string{"put", "k1", "v2", "--prev-kv", "--user", "alice:alicepw"}, want: "OK\nk1\nv1"},
	{args: []string{"put", "p/x", "v", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"put", "p/x", "v", "--user", "root:rootpw"}, want: "OK"},
	{args: []string{"get", "p/", "--prefix", "--user", "alice:alicepw"}, want: "p/x\nv"},
	{args: []string{"get", "p/", "--from-key", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"get", "m", "n", "--user", "alice:alicepw"}},
	{args: []string{"get", "m", "o", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"put", "zz", "v", "--user", "alice:alicepw"}, want: "OK"},
	{args: []string{"put", "e", "v", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"get", "zz", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"put", "zz", "v", "--prev-kv", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"del", "zz", "--user", "alice:alicepw"}, want: "1"},
	{args: []string{"get", "k1"}, want: "user name is empty"},
	{args: []string{"get", "k1", "--user", "alice:wrong"}, want: "authentication failed, invalid user ID or password"},
	{args: []string{"get", "k1", "--user", "bob:x"}, want: "authentication failed, invalid user ID or password"},
	{args: []string{"txn", "--user", "alice:alicepw"}, stdin: "value(\"p/x\") = \"v\"\n\nput k1 t\n\nget k1\n\n", want: "SUCCESS\n\nOK"},
	{args: []string{"txn", "--user", "alice:alicepw"}, stdin: "value(\"p/x\") = \"v\"\n\nput k1 t\n\nput p/x w\n\n", want: "permission denied"},
	{args: []string{"txn", "--user", "alice:alicepw"}, stdin: "value(\"a\") = \"v\"\n\nput k1 t\n\n\n", want: "permission denied"},
	{args: []string{"watch", "p/x", "--user", "alice:alicepw"}, stream: time.Second},
	{args: []string{"watch", "a", "--user", "alice:alicepw"}, stream: time.Second, want: "permission denied"},
	{args: []string{"lease", "grant", "60", "--user", "alice:alicepw"}, want: "granted with TTL(60s)"},
	{args: []string{"put", "k1", "l", "--lease={lease}", "--user", "alice:alicepw"}, want: "OK"},
	{args: []string{"lease", "timetolive", "{lease}", "--keys", "--user", "alice:alicepw"}, want: "attached keys([k1])"},
	{args: []string{"user", "list", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"user", "get", "alice", "--user", "alice:alicepw"}, want: "Roles: r1"},
	{args: []string{"user", "get", "root", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"role", "get", "r1", "--user", "alice:alicepw"}, want: "Role r1"},
	{args: []string{"role", "get", "root", "--user", "root:rootpw"}, want: "Role root\nKV Read:\n\t[, <open ended>"},
	{args: []string{"compaction", "2", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"defrag", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"alarm", "list", "--user", "alice:alicepw"}},
	{args: []string{"alarm", "disarm", "--user", "alice:alicepw"}},
	{args: []string{"member", "list", "--user", "alice:alicepw"}, want: "started, compat,"},
	{args: []string{"endpoint", "status", "--user", "alice:alicepw"}, want: "true, false"},
	{args: []string{"lease", "revoke", "{lease}", "--user", "alice:alicepw"}, want: "revoked"},
	{args: []string{"role", "revoke-permission", "r1", "k1", "--user", "root:rootpw"}, want: "Permission of key k1 is revoked from role r1"},
	{args: []string{"role", "revoke-permission", "r1", "k1", "--user", "root:rootpw"}, want: "permission is not granted to the role"},
	{args: []string{"put", "k1", "v", "--user", "alice:alicepw"}, want: "permission denied"},
	{args: []string{"role", "revoke-permission", "r1", "p/", "--prefix", "--user", "root:rootpw"}, want: "revoked"},
	{args: []string{"role", "revoke-permission", "r1", "x", "--from-key", "--user", "root:rootpw"}, want: "revoked"},
	{args: []string{"user", "passwd", "alice", "--interactive=false", "--user", "root:rootpw"}, stdin: "newpw\n", want: "Password updated"},
	{args: []string{"get", "m", "--user", "alice:alicepw"}, want: "authentication failed"},
	{args: []string{"get", "m", "--user", "alice:newpw"}},
	{args: []string{"user", "delete", "root", "--user", "root:rootpw"}, want: "invalid auth management"},
	{args: []string{"user", "revoke-role", "root", "root", "--user", "root:rootpw"}, want: "invalid auth management"},
	{args: []string{"role", "delete", "root", "--user", "root:rootpw"}, want: "invalid auth management"},
	{args: []string{"user", "revoke-role", "alice", "r1", "--user", "root:rootpw"}, want: "Role r1 is revoked from user alice"},
	{args: []string{"get", "m", "--user", "alice:newpw"}, want: "permission denied"},
	{args: []string{"role", "delete", "r1", "--user", "root:rootpw"}, want: "Role r1 deleted"},
	{args: []string{"auth", "status", "--user", "root:rootpw", "-w", "json"}},
	{args: []string{"auth", "disable", "--user", "alice:newpw"}, want: "permission denied"},
	{args: []string{"auth", "disable", "--user", "root:rootpw"}, want: "Authentication Disabled"},
	{args: []string{"auth", "status"}, want: "Authentication Status: false"},
	{args: []string{"get", "p/x"}, want: "p/x\nv"},
	{args: []string{"user", "delete", "alice"}, want: "User alice deleted"},
	{args: []string{"user", "delete", "alice"}, want: "user name not found"},
	{args: []string{"role", "list"}, want: "root"},
	{args: []string{"user", "list"}, want: "root"},
	{args: []string{"user", "delete", "root"}, want: "User root deleted"},
}

// TestEtcdctlAuth runs ctlAuthScript against each target; on continuum kv every step's
// normalised output (exit code included) must equal etcd's.
func TestEtcdctlAuth(t *testing.T) {
	t.Parallel()
	ctl, err := toolBinary("CONTINUUM_ETCDCTL_BIN", "etcdctl")
	if err != nil {
		requireOrSkip(t, err.Error())
	}
	var reference []string
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		outs := runCtlScript(t, ctl, s, ctlAuthScript)
		if tg == etcdTarget {
			reference = outs
			return
		}
		if reference == nil {
			t.Log("no etcd reference outputs (etcd skipped or failed): checked expected substrings only")
			return
		}
		for i := range outs {
			if outs[i] != reference[i] {
				t.Errorf("step %d etcdctl %s:\n--- etcd\n%q\n--- %s\n%q", i, strings.Join(ctlAuthScript[i].args, " "),
					reference[i], tg.name, outs[i])
			}
		}
	})
}

// authLog records a clientv3 sequence's results as text to compare between targets.
type authLog struct {
	t     *testing.T
	lines []string
}

func (l *authLog) add(step string, v any, err error) {
	var out string
	switch {
	case err != nil:
		out = "error: " + err.Error()
	case v == nil:
		out = "ok"
	default:
		out = fmt.Sprint(v)
	}
	l.lines = append(l.lines, step+" -> "+out)
}

func kvs(r *clientv3.GetResponse) string {
	var b strings.Builder
	for _, kv := range r.Kvs {
		fmt.Fprintf(&b, "%s=%s ", kv.Key, kv.Value)
	}
	return fmt.Sprintf("[%s] more=%v", strings.TrimSpace(b.String()), r.More)
}

// clientAuthSequence is the clientv3 side of the suite: the typed Auth API, requests as
// users through clientv3's own token handling, raw tokens (forged, stale after a password
// change), and each request type's permission check.
func clientAuthSequence(t *testing.T, s *server) []string {
	l := &authLog{t: t}
	ctx := testCtx(t, 60*time.Second)
	admin := s.client(t)
	as := func(user, pw string) (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{Endpoints: []string{s.endpoint}, DialTimeout: 5 * time.Second,
			Logger: zap.NewNop(), Username: user, Password: pw})
	}
	put := func(c *clientv3.Client, step, k, v string, opts ...clientv3.OpOption) {
		_, err := c.Put(ctx, k, v, opts...)
		l.add(step, nil, err)
	}
	get := func(c *clientv3.Client, step, k string, opts ...clientv3.OpOption) {
		r, err := c.Get(ctx, k, opts...)
		if err != nil {
			l.add(step, nil, err)
			return
		}
		l.add(step, kvs(r), nil)
	}
	st, err := admin.AuthStatus(ctx)
	if err == nil {
		l.add("status", fmt.Sprintf("enabled=%v rev=%d", st.Enabled, st.AuthRevision), nil)
	} else {
		l.add("status", nil, err)
	}
	_, err = admin.Authenticate(ctx, "root", "x")
	l.add("authenticate while disabled", nil, err)
	for _, step := range []struct {
		name string
		call func() error
	}{
		{"user add root", func() error { _, err := admin.UserAdd(ctx, "root", "rootpw"); return err }},
		{"user add empty", func() error { _, err := admin.UserAdd(ctx, "", "x"); return err }},
		{"user add nopw", func() error {
			_, err := admin.UserAddWithOptions(ctx, "cn", "", &clientv3.UserAddOptions{NoPassword: true})
			return err
		}},
		{"enable without root role", func() error { _, err := admin.AuthEnable(ctx); return err }},
		{"role add empty", func() error { _, err := admin.RoleAdd(ctx, ""); return err }},
		{"role add w", func() error { _, err := admin.RoleAdd(ctx, "w"); return err }},
		{"grant nil end", func() error {
			_, err := admin.RoleGrantPermission(ctx, "w", "a/", clientv3.GetPrefixRangeEnd("a/"), clientv3.PermissionType(authpb.READWRITE))
			return err
		}},
		{"grant again (update)", func() error {
			_, err := admin.RoleGrantPermission(ctx, "w", "a/", clientv3.GetPrefixRangeEnd("a/"), clientv3.PermissionType(authpb.WRITE))
			return err
		}},
		{"grant read b", func() error {
			_, err := admin.RoleGrantPermission(ctx, "w", "b", "", clientv3.PermissionType(authpb.READ))
			return err
		}},
		{"grant empty key", func() error {
			_, err := admin.RoleGrantPermission(ctx, "w", "", "", clientv3.PermissionType(authpb.READ))
			return err
		}},
		{"user add u", func() error { _, err := admin.UserAdd(ctx, "u", "upw"); return err }},
		{"grant w to u", func() error { _, err := admin.UserGrantRole(ctx, "u", "w"); return err }},
		{"grant w to u again", func() error { _, err := admin.UserGrantRole(ctx, "u", "w"); return err }},
		{"grant root to root", func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err }},
		{"enable", func() error { _, err := admin.AuthEnable(ctx); return err }},
		{"enable again", func() error { _, err := admin.AuthEnable(ctx); return err }},
		{"anonymous put", func() error { _, err := admin.Put(ctx, "a/1", "v"); return err }},
		{"anonymous user list", func() error { _, err := admin.UserList(ctx); return err }},
		{"anonymous authenticate nopw user", func() error { _, err := admin.Authenticate(ctx, "cn", ""); return err }},
		{"anonymous authenticate wrong", func() error { _, err := admin.Authenticate(ctx, "u", "bad"); return err }},
		{"anonymous authenticate unknown", func() error { _, err := admin.Authenticate(ctx, "ghost", "bad"); return err }},
	} {
		l.add(step.name, nil, step.call())
	}
	root, err := as("root", "rootpw")
	if err != nil {
		t.Fatalf("root client: %v", err)
	}
	defer root.Close()
	u, err := as("u", "upw")
	if err != nil {
		t.Fatalf("u client: %v", err)
	}
	defer u.Close()
	put(root, "root put b", "b", "1")
	put(u, "u put a/1", "a/1", "v")
	get(u, "u get a/1 (write only)", "a/1")
	get(u, "u get b", "b")
	get(root, "root get a/", "a/", clientv3.WithPrefix())
	put(u, "u put b", "b", "2")
	put(u, "u put a/2 prevkv", "a/2", "v", clientv3.WithPrevKV())
	_, err = u.Delete(ctx, "a/1")
	l.add("u delete a/1", nil, err)
	_, err = u.Delete(ctx, "a/", clientv3.WithPrefix(), clientv3.WithPrevKV())
	l.add("u delete a/ prevkv", nil, err)
	tr, err := u.Txn(ctx).If(clientv3.Compare(clientv3.Value("b"), "=", "1")).Then(clientv3.OpPut("a/3", "x")).Commit()
	if err == nil {
		l.add("u txn", fmt.Sprintf("succeeded=%v", tr.Succeeded), nil)
	} else {
		l.add("u txn", nil, err)
	}
	_, err = u.Txn(ctx).If(clientv3.Compare(clientv3.Value("b"), "=", "1")).Then(clientv3.OpPut("a/3", "x")).Else(clientv3.OpGet("c")).Commit()
	l.add("u txn else reads c", nil, err)
	_, err = u.Compact(ctx, 1)
	l.add("u compact", nil, err)
	_, err = u.HashKV(ctx, s.endpoint, 0)
	l.add("u hashkv", nil, err)
	_, err = u.Status(ctx, s.endpoint)
	l.add("u status", nil, err)
	_, err = u.MemberAdd(ctx, []string{"http://127.0.0.1:1"})
	l.add("u member add", nil, err)
	ur, err := u.UserGet(ctx, "u")
	if err == nil {
		l.add("u user get self", ur.Roles, nil)
	} else {
		l.add("u user get self", nil, err)
	}
	rg, err := root.RoleGet(ctx, "w")
	if err == nil {
		l.add("root role get w", rg.Perm, nil)
	} else {
		l.add("root role get w", nil, err)
	}
	rl, err := root.RoleList(ctx)
	if err == nil {
		l.add("root role list", rl.Roles, nil)
	} else {
		l.add("root role list", nil, err)
	}

	// Watches: permitted, and refused with etcd's cancel reason.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, k := range []string{"b", "c"} {
		wr := <-u.Watch(wctx, k, clientv3.WithCreatedNotify())
		l.add("u watch "+k, fmt.Sprintf("created=%v canceled=%v err=%v", wr.Created, wr.Canceled, wr.Err()), nil)
	}

	// Leases: revoking needs write on every attached key.
	lease, err := root.Grant(ctx, 60)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	put(root, "root put b with lease", "b", "3", clientv3.WithLease(lease.ID))
	_, err = u.Revoke(ctx, lease.ID)
	l.add("u revoke lease on b", nil, err)
	put(u, "u put a/4 attaching lease on b", "a/4", "v", clientv3.WithLease(lease.ID))
	_, err = u.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
	l.add("u lease ttl (b readable)", nil, err)
	_, err = root.Revoke(ctx, lease.ID)
	l.add("root revoke lease", nil, err)

	// Raw tokens: forged, and stale after a password change.
	kvc := pb.NewKVClient(admin.ActiveConnection())
	tok := func(tk string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, tk)
	}
	_, err = kvc.Range(tok("forged.1"), &pb.RangeRequest{Key: []byte("b")})
	l.add("range with forged token", nil, err)
	ar, err := admin.Authenticate(ctx, "u", "upw")
	if err != nil {
		t.Fatalf("authenticate u: %v", err)
	}
	_, err = kvc.Range(tok(ar.Token), &pb.RangeRequest{Key: []byte("b")})
	l.add("range with u's token", nil, err)
	_, err = root.UserChangePassword(ctx, "u", "upw2")
	l.add("change u's password", nil, err)
	_, err = kvc.Range(tok(ar.Token), &pb.RangeRequest{Key: []byte("b")})
	l.add("range with u's token after password change", nil, err)
	_, err = as("u", "upw")
	l.add("u with old password", nil, err)

	// Role deletion takes the role from its users; auth disable opens everything.
	_, err = root.RoleDelete(ctx, "w")
	l.add("root role delete w", nil, err)
	u2, err := as("u", "upw2")
	if err != nil {
		t.Fatalf("u client: %v", err)
	}
	defer u2.Close()
	get(u2, "u get b after role delete", "b")
	ur, err = root.UserGet(ctx, "u")
	if err == nil {
		l.add("root user get u", ur.Roles, nil)
	} else {
		l.add("root user get u", nil, err)
	}
	_, err = root.AuthDisable(ctx)
	l.add("disable", nil, err)
	get(admin, "anonymous get b", "b")
	st, err = admin.AuthStatus(ctx)
	if err == nil {
		l.add("status", fmt.Sprintf("enabled=%v rev=%d", st.Enabled, st.AuthRevision), nil)
	} else {
		l.add("status", nil, err)
	}
	return l.lines
}

// TestClientAuth runs clientAuthSequence on each target, with simple tokens and with JWT
// (RS256 and ES256 keys, the same files for both targets); continuum kv's results and
// errors must equal etcd's, step by step.
func TestClientAuth(t *testing.T) {
	t.Parallel()
	t.Run("simple", func(t *testing.T) { compareClientAuth(t, serverOptions{}) })
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run("jwt-"+alg, func(t *testing.T) {
			priv, pub := writeJWTKeys(t, alg)
			compareClientAuth(t, serverOptions{authToken: "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=" + alg + ",ttl=10m"})
		})
	}
}

func compareClientAuth(t *testing.T, o serverOptions) {
	var reference []string
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, o)
		lines := clientAuthSequence(t, s)
		if tg == etcdTarget {
			reference = lines
			return
		}
		if reference == nil {
			t.Log("no etcd reference (etcd skipped or failed)")
			return
		}
		if len(lines) != len(reference) {
			t.Fatalf("%d steps, etcd %d", len(lines), len(reference))
		}
		for i := range lines {
			if lines[i] != reference[i] {
				t.Errorf("step %d:\n--- etcd\n%s\n--- %s\n%s", i, reference[i], tg.name, lines[i])
			}
		}
	})
}

// writeJWTKeys writes a fresh key pair for alg (RS256 or ES256) as PEM files.
func writeJWTKeys(t *testing.T, alg string) (privFile, pubFile string) {
	t.Helper()
	var der, pubDER []byte
	var typ string
	var err error
	switch alg {
	case "RS256":
		k, kerr := rsa.GenerateKey(rand.Reader, 2048)
		if kerr != nil {
			t.Fatal(kerr)
		}
		der, typ = x509.MarshalPKCS1PrivateKey(k), "RSA PRIVATE KEY"
		pubDER, err = x509.MarshalPKIXPublicKey(&k.PublicKey)
	case "ES256":
		k, kerr := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if kerr != nil {
			t.Fatal(kerr)
		}
		der, err = x509.MarshalECPrivateKey(k)
		typ = "EC PRIVATE KEY"
		if err == nil {
			pubDER, err = x509.MarshalPKIXPublicKey(&k.PublicKey)
		}
	default:
		t.Fatalf("no keys for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	privFile, pubFile = filepath.Join(dir, "priv.pem"), filepath.Join(dir, "pub.pem")
	for f, b := range map[string]*pem.Block{privFile: {Type: typ, Bytes: der}, pubFile: {Type: "PUBLIC KEY", Bytes: pubDER}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return privFile, pubFile
}

// TestAuthTiming: an unknown user and a wrong password must cost the server the same work to
// refuse on continuum kv, or the answer time tells which user names exist. The work is the
// server process's CPU time per refusal (from /proc), summed over interleaved tries; the
// totals must agree within a factor of 2. CPU time, not wall time: on a busy machine the wall
// time of one try is mostly waiting for a core (medians 214 ms vs 92 ms were seen at a load
// average of 30), while the bcrypt comparison that makes the two answers alike costs the same
// CPU however long it waits. Skipping it for an unknown user makes that side's total near 0
// and fails the check. etcd 3.6 refuses an unknown user before hashing anything; its ratio is
// logged, not asserted (docs/kv.md, Authentication, says how kv differs).
func TestAuthTiming(t *testing.T) {
	t.Parallel()
	n := 11
	if testing.Short() {
		n = 5
	}
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := tg.start(t, serverOptions{})
		c := s.client(t)
		ctx := testCtx(t, 3*time.Minute)
		for _, step := range []func() error{
			func() error { _, err := c.UserAdd(ctx, "root", "rootpw"); return err },
			func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err },
			func() error { _, err := c.AuthEnable(ctx); return err },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		auth := pb.NewAuthClient(c.ActiveConnection())
		pid := s.proc.cmd.Process.Pid
		cpu := func() float64 {
			v, err := procstat.CPUSeconds(pid, false)
			if err != nil {
				t.Fatalf("%s CPU time: %v", tg.name, err)
			}
			return v
		}
		var unknown, wrong []time.Duration
		var unknownCPU, wrongCPU float64
		for i := 0; i < n; i++ {
			for _, name := range []string{"nobody", "root"} {
				c0, start := cpu(), time.Now()
				_, err := auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: name, Password: "guess"})
				d, used := time.Since(start), cpu()-c0
				if rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(rpctypes.ErrGRPCAuthFailed) {
					t.Fatalf("authenticate %s: %v, want %v", name, err, rpctypes.ErrGRPCAuthFailed)
				}
				if name == "nobody" {
					unknown, unknownCPU = append(unknown, d), unknownCPU+used
				} else {
					wrong, wrongCPU = append(wrong, d), wrongCPU+used
				}
			}
		}
		ratio := unknownCPU / wrongCPU
		t.Logf("%s: %d refusals each: server CPU for an unknown user %.0f ms, for a wrong password %.0f ms (ratio %.3f); median wall time %v vs %v",
			tg.name, n, unknownCPU*1000, wrongCPU*1000, ratio, medianDuration(unknown), medianDuration(wrong))
		// With CONTINUUM_COMPAT_KV=etcd the kv target is etcd, which leaks by design.
		if tg != kvTarget || os.Getenv("CONTINUUM_COMPAT_KV") == "etcd" {
			return
		}
		if wrongCPU <= 0 {
			t.Fatalf("%d wrong passwords cost the server no measurable CPU: no bcrypt?", n)
		}
		if ratio < 0.5 || ratio > 2 {
			t.Errorf("server CPU to refuse an unknown user %.0f ms vs a wrong password %.0f ms over %d tries each: ratio %.2f outside [0.5, 2]",
				unknownCPU*1000, wrongCPU*1000, n, ratio)
		}
	})
}

func medianDuration(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
