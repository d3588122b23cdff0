package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

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
