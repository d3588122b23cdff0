package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"
)

// clusterAuthSequence is the two-member side of the auth suite: set up on m0, a JWT issued on
// m1, the password changed on m0, and the token (and tokens issued after the change, on each
// member) used on both members, with each member's auth revision. Where continuum kv
// replicates (m1 learning of a change), the step waits until m1 has it; etcd has it at once.
func clusterAuthSequence(t *testing.T, ms []*server) []string {
	l := &authLog{t: t}
	ctx := testCtx(t, 2*time.Minute)
	m0, m1 := ms[0].client(t), ms[1].client(t)
	as := func(s *server, user, pw string) (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{Endpoints: []string{s.endpoint}, DialTimeout: 5 * time.Second,
			Logger: zap.NewNop(), Username: user, Password: pw})
	}
	waitFor := func(what string, f func() error) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, step := range []struct {
		name string
		call func() error
	}{
		{"role add kw", func() error { _, err := m0.RoleAdd(ctx, "kw"); return err }},
		{"grant kw k", func() error {
			_, err := m0.RoleGrantPermission(ctx, "kw", "k", "", clientv3.PermissionType(authpb.READWRITE))
			return err
		}},
		{"user add u", func() error { _, err := m0.UserAdd(ctx, "u", "upw"); return err }},
		{"grant kw to u", func() error { _, err := m0.UserGrantRole(ctx, "u", "kw"); return err }},
		{"user add root", func() error { _, err := m0.UserAdd(ctx, "root", "rootpw"); return err }},
		{"grant root to root", func() error { _, err := m0.UserGrantRole(ctx, "root", "root"); return err }},
	} {
		l.add(step.name, nil, step.call())
	}
	// m1 has the users before auth is enabled, so enabling reaches it as a change of its own.
	waitFor("m1 has root", func() error {
		r, err := m1.UserGet(ctx, "root")
		if err == nil && len(r.Roles) == 0 {
			err = errors.New("root without the root role")
		}
		return err
	})
	_, err := m0.AuthEnable(ctx)
	l.add("enable on m0", nil, err)
	waitFor("m1 enables auth", func() error { _, err := m1.Authenticate(ctx, "u", "upw"); return err })

	put := func(step string, c *clientv3.Client, tok string) {
		kvc := pb.NewKVClient(c.ActiveConnection())
		_, err := kvc.Put(metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, tok), &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
		l.add(step, nil, err)
	}
	ar, err := m1.Authenticate(ctx, "u", "upw")
	if err != nil {
		t.Fatalf("authenticate u on m1: %v", err)
	}
	old := ar.Token
	put("m1's token on m0", m0, old)
	put("m1's token on m1", m1, old)
	root, err := as(ms[0], "root", "rootpw")
	if err != nil {
		t.Fatalf("root on m0: %v", err)
	}
	defer root.Close()
	_, err = root.UserChangePassword(ctx, "u", "upw2")
	l.add("change u's password on m0", nil, err)
	put("m1's token on m0 after the change", m0, old)
	waitFor("m1 learns the password change", func() error { _, err := m1.Authenticate(ctx, "u", "upw2"); return err })
	put("m1's token on m1 after the change", m1, old)
	for i, c := range []*clientv3.Client{m0, m1} {
		ar, err := c.Authenticate(ctx, "u", "upw2")
		if err != nil {
			t.Fatalf("authenticate u on m%d: %v", i, err)
		}
		put(fmt.Sprintf("m%d's new token on m0", i), m0, ar.Token)
		put(fmt.Sprintf("m%d's new token on m1", i), m1, ar.Token)
	}
	for i, s := range ms {
		r, err := as(s, "root", "rootpw")
		if err != nil {
			t.Fatalf("root on m%d: %v", i, err)
		}
		st, err := r.AuthStatus(ctx)
		r.Close()
		if err == nil {
			l.add(fmt.Sprintf("status on m%d", i), fmt.Sprintf("enabled=%v rev=%d", st.Enabled, st.AuthRevision), nil)
		} else {
			l.add(fmt.Sprintf("status on m%d", i), nil, err)
		}
	}
	return l.lines
}

// TestClusterAuthJWTRevision runs clusterAuthSequence on two-member clusters of each target
// with JWT tokens (the same key files): a token's age must be judged on every member as etcd
// judges it, and the members must show etcd's auth revisions (issue 41, defect 16).
func TestClusterAuthJWTRevision(t *testing.T) {
	t.Parallel()
	priv, pub := writeJWTKeys(t, "ES256")
	o := serverOptions{authToken: "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=ES256,ttl=10m"}
	var reference []string
	forEachTarget(t, func(t *testing.T, tg *target) {
		lines := clusterAuthSequence(t, startCluster(t, tg, 2, o, nil))
		if tg == etcdTarget {
			reference = lines
			return
		}
		if reference == nil {
			t.Log("no etcd reference (etcd skipped or failed)")
			return
		}
		if len(lines) != len(reference) {
			t.Fatalf("%d steps, etcd %d:\n%v\n%v", len(lines), len(reference), reference, lines)
		}
		for i := range lines {
			if lines[i] != reference[i] {
				t.Errorf("step %d:\n--- etcd\n%s\n--- %s\n%s", i, reference[i], tg.name, lines[i])
			}
		}
	})
}
