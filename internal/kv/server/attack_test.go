package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestAttackSimpleTokenSurvivesRemoteDisableEnable: auth disable drops every simple token (as
// etcd's does, on every member, since it is a Raft entry). A member that adopts the copy made
// after a disable and re-enable on another member never sees auth off, and keeps its simple
// tokens: a token issued there before the disable still works after it.
func TestAttackSimpleTokenSurvivesRemoteDisableEnable(t *testing.T) {
	ac := startAuthCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok := must(anonClient(t, ac.servers[2]).Authenticate(ctx, "u", "upw"))(t).Token
	put := func(m int) error {
		_, err := pb.NewKVClient(rawConn(t, ac.servers[m])).Put(withToken(ctx, tok), &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
		return err
	}
	if err := put(2); err != nil {
		t.Fatal(err)
	}
	ac.isolate(2, true)
	root := userClient(t, ac.servers[0], "root", "rootpw")
	must(root.AuthDisable(ctx))(t)
	must(anonClient(t, ac.servers[0]).AuthEnable(ctx))(t)
	ac.isolate(2, false)
	eventually(t, "m2 adopts the copy", 20*time.Second, func() error {
		if a, b := authRevOf(ac.servers[0]), authRevOf(ac.servers[2]); a != b {
			return fmt.Errorf("%+v vs %+v", a, b)
		}
		return nil
	})
	if err := put(2); err == nil {
		t.Errorf("m2's simple token issued before auth was disabled (and re-enabled) on m0 still accepted on m2")
	}
}

// TestAttackCutOffMemberKeepsRevokedLeaseAlive: past --auth-majority-timeout a cut-off member
// refuses writes because it may not know of a revocation, but LeaseKeepAlive (etcd: refused
// without a leader) is not gated: a user whose write permission on k was revoked on the
// majority side keeps its leased k alive through the cut-off member for as long as the
// partition lasts.
func TestAttackCutOffMemberKeepsRevokedLeaseAlive(t *testing.T) {
	ac := startAuthCluster(t, 3, func(c *Config) { c.AuthMajorityTimeout = minAuthMajorityTimeout })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := ac.users[2]
	l := must(u.Grant(ctx, 5))(t)
	must(u.Put(ctx, "k", "leased", clientv3.WithLease(l.ID)))(t)
	ac.isolate(2, true)
	root := userClient(t, ac.servers[0], "root", "rootpw")
	must(root.RoleRevokePermission(ctx, "kw", "k", ""))(t)
	eventually(t, "m2 refuses KV writes once cut off for the timeout", 20*time.Second, func() error {
		if _, err := u.Put(ctx, "k", "y"); !majorityRefusal(err) {
			return fmt.Errorf("put on m2: %v", err)
		}
		return nil
	})
	if _, err := u.KeepAliveOnce(ctx, l.ID); err == nil {
		t.Errorf("revoked user's lease keep-alive accepted on the cut-off member past --auth-majority-timeout (its writes are refused)")
	}
}
