package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// linkProxy forwards one direction of a peer link (the member that dials -> the member that
// serves); cut closes its connections and refuses new ones until heal, as a partition.
type linkProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *linkProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *linkProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.wg.Add(2)
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

func (p *linkProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// startProxiedCluster starts n members whose peer links all go through proxies:
// links[i][j] carries member i's pulls from member j.
func startProxiedCluster(t *testing.T, n int, opts ...func(*Config)) ([]*Server, [][]*linkProxy) {
	t.Helper()
	addrs := freePorts(t, n)
	links := make([][]*linkProxy, n)
	for i := range links {
		links[i] = make([]*linkProxy, n)
		for j := range links[i] {
			if i != j {
				links[i][j] = newLinkProxy(t, addrs[j])
			}
		}
	}
	var servers []*Server
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		ic := map[string][]string{}
		for j := range addrs {
			u := "http://" + addrs[j]
			if j != i {
				u = links[i][j].url()
			}
			ic[fmt.Sprintf("m%d", j)] = []string{u}
		}
		s := startKVNoClient(t, append([]func(*Config){func(c *Config) {
			c.Name = name
			c.InitialCluster = ic
			c.InitialClusterToken = "test"
			c.ListenPeerURLs = []string{"http://" + addrs[i]}
		}}, opts...)...)
		servers = append(servers, s)
	}
	return servers, links
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func anonClient(t *testing.T, s *Server) *clientv3.Client { return userClient(t, s, "", "") }

// authCluster is n proxied members with auth enabled from m0: role kw may read and write
// "k", user u (password upw) holds kw, root's password is rootpw; every member has the whole
// store and u has written on each (users[i] is u's clientv3 client on member i).
type authCluster struct {
	servers []*Server
	links   [][]*linkProxy
	users   []*clientv3.Client
}

func startAuthCluster(t *testing.T, n int, opts ...func(*Config)) *authCluster {
	t.Helper()
	servers, links := startProxiedCluster(t, n, append([]func(*Config){fastAuth}, opts...)...)
	ctx := ctxT(t)
	admin := anonClient(t, servers[0])
	must(admin.RoleAdd(ctx, "kw"))(t)
	must(admin.RoleGrantPermission(ctx, "kw", "k", "", clientv3.PermissionType(authpb.READWRITE)))(t)
	must(admin.UserAdd(ctx, "u", "upw"))(t)
	must(admin.UserGrantRole(ctx, "u", "kw"))(t)
	enableRoot(t, admin)

	// Replicated: every member has auth enabled and knows u.
	for i, s := range servers {
		c := anonClient(t, s)
		eventually(t, fmt.Sprintf("m%d enables auth", i), 20*time.Second, func() error {
			_, err := c.Get(ctx, "k")
			if rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCUserEmpty) {
				return nil
			}
			return fmt.Errorf("anonymous get: %v", err)
		})
	}
	ac := &authCluster{servers: servers, links: links}
	for i, s := range servers {
		var c *clientv3.Client
		eventually(t, fmt.Sprintf("u authenticates on m%d", i), 20*time.Second, func() error {
			var err error
			c, err = clientv3.New(clientv3.Config{Endpoints: []string{strings.TrimPrefix(s.ClientURLs()[0], "http://")},
				DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Username: "u", Password: "upw"})
			return err
		})
		t.Cleanup(func() { c.Close() })
		eventually(t, fmt.Sprintf("u writes on m%d", i), 20*time.Second, func() error {
			_, err := c.Put(ctxT(t), "k", fmt.Sprint(i)) // Unavailable until the members have met
			return err
		})
		ac.users = append(ac.users, c)
	}
	return ac
}

// isolate cuts (or heals) every peer link between member i and the others.
func (ac *authCluster) isolate(i int, cut bool) {
	for j := range ac.servers {
		if j != i {
			ac.links[i][j].setCut(cut)
			ac.links[j][i].setCut(cut)
		}
	}
}

// majorityRefusal tells whether err is the cut-off member's refusal.
func majorityRefusal(err error) bool {
	return status.Code(err) == codes.Unavailable && strings.Contains(err.Error(), "--auth-majority-timeout")
}

// TestAuthReplicatesAndBoundsPartition: users, roles and permissions made on one member reach
// the others; a member cut off from the majority while a permission is revoked there keeps
// allowing it only until --auth-majority-timeout, then refuses writes (reads go on); after the
// heal it learns the revocation.
func TestAuthReplicatesAndBoundsPartition(t *testing.T) {
	const timeout = minAuthMajorityTimeout
	ac := startAuthCluster(t, 3, func(c *Config) { c.AuthMajorityTimeout = timeout })
	servers, users := ac.servers, ac.users
	ctx := ctxT(t)

	// Partition m2 from m0 and m1; revoke on the majority side.
	ac.isolate(2, true)
	root := userClient(t, servers[0], "root", "rootpw")
	must(root.RoleRevokePermission(ctx, "kw", "k", ""))(t)
	eventually(t, "m1 learns the revocation", 20*time.Second, func() error {
		_, err := users[1].Put(ctx, "k", "x")
		if rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCPermissionDenied) {
			return nil
		}
		return fmt.Errorf("put on m1: %v", err)
	})
	// m2 cannot know; within the bound it refuses writes instead.
	eventually(t, "m2 refuses writes once cut off for the timeout", 20*time.Second, func() error {
		_, err := users[2].Put(ctx, "k", "y")
		if rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCPermissionDenied) {
			t.Fatal("m2 knew of the revocation through a cut link")
		}
		if majorityRefusal(err) {
			return nil
		}
		return fmt.Errorf("put on m2: %v", err)
	})
	if _, err := users[2].Get(ctx, "k"); err != nil {
		t.Errorf("read on the cut-off member: %v (reads are not bounded)", err)
	}

	// Heal: m2 learns the revocation.
	ac.isolate(2, false)
	eventually(t, "m2 learns the revocation after the heal", 30*time.Second, func() error {
		_, err := users[2].Put(ctx, "k", "z")
		if rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCPermissionDenied) {
			return nil
		}
		if err == nil {
			return errors.New("put allowed")
		}
		return err
	})
}

// authRevOf is the revision of the member's copy of the auth store (equal revisions: the
// same copy).
func authRevOf(s *Server) authRev { return s.auth.rev() }

// TestAuthCutOffMemberRefusesAuthChanges: a member cut off from the majority for longer than
// --auth-majority-timeout refuses every auth change, as it refuses KV writes, so that no
// change of its own, stamped after a revocation made on the majority side, can win after the
// heal and undo the revocation on every member (issue 41, defect 15).
func TestAuthCutOffMemberRefusesAuthChanges(t *testing.T) {
	ac := startAuthCluster(t, 3, func(c *Config) { c.AuthMajorityTimeout = minAuthMajorityTimeout })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cutRoot := userClient(t, ac.servers[2], "root", "rootpw") // authenticated before the cut

	ac.cutOffPastTimeout(t, ctx)

	// Every auth change is refused on the cut-off member, each one a change that would
	// succeed if it were not cut off (the last ones would open the whole cluster).
	for _, step := range []struct {
		name string
		call func() error
	}{
		{"role add", func() error { _, err := cutRoot.RoleAdd(ctx, "x"); return err }},
		{"role grant permission", func() error {
			_, err := cutRoot.RoleGrantPermission(ctx, "kw", "k", "", clientv3.PermissionType(authpb.READWRITE))
			return err
		}},
		{"role revoke permission", func() error {
			_, err := cutRoot.RoleRevokePermission(ctx, "kw", "k", "") // m2 still has it
			return err
		}},
		{"user add", func() error { _, err := cutRoot.UserAdd(ctx, "v", "vpw"); return err }},
		{"user grant role", func() error { _, err := cutRoot.UserGrantRole(ctx, "u", "root"); return err }},
		{"user revoke role", func() error { _, err := cutRoot.UserRevokeRole(ctx, "u", "kw"); return err }},
		{"user change password", func() error { _, err := cutRoot.UserChangePassword(ctx, "u", "new"); return err }},
		{"user delete", func() error { _, err := cutRoot.UserDelete(ctx, "u"); return err }},
		{"role delete", func() error { _, err := cutRoot.RoleDelete(ctx, "kw"); return err }},
		{"auth enable", func() error { _, err := cutRoot.AuthEnable(ctx); return err }},
		{"auth disable", func() error { _, err := cutRoot.AuthDisable(ctx); return err }},
	} {
		if err := step.call(); !majorityRefusal(err) {
			t.Errorf("%s on the cut-off member: %v, want the --auth-majority-timeout refusal", step.name, err)
		}
	}

	// After the heal the revocation holds on every member.
	ac.isolate(2, false)
	eventually(t, "members agree on the auth store after the heal", 30*time.Second, func() error {
		a, b, c := authRevOf(ac.servers[0]), authRevOf(ac.servers[1]), authRevOf(ac.servers[2])
		if a != b || a != c {
			return fmt.Errorf("revisions %+v %+v %+v", a, b, c)
		}
		return nil
	})
	for i, u := range ac.users {
		eventually(t, fmt.Sprintf("m%d serves writes again", i), 20*time.Second, func() error {
			_, err := u.Put(ctx, "k", "after")
			if majorityRefusal(err) {
				return err
			}
			if err == nil {
				t.Fatalf("u's put allowed on m%d after the heal: the revocation was undone", i)
			}
			if rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(rpctypes.ErrGRPCPermissionDenied) {
				return fmt.Errorf("put on m%d: %v", i, err)
			}
			return nil
		})
	}
}

// cutOffPastTimeout cuts m2 off, revokes kw's permission on k on m0, and waits until m2
// refuses u's writes (it has not heard from the majority for the timeout).
func (ac *authCluster) cutOffPastTimeout(t *testing.T, ctx context.Context) {
	t.Helper()
	ac.isolate(2, true)
	root := userClient(t, ac.servers[0], "root", "rootpw")
	must(root.RoleRevokePermission(ctx, "kw", "k", ""))(t)
	eventually(t, "m2 refuses KV writes once cut off for the timeout", 20*time.Second, func() error {
		if _, err := ac.users[2].Put(ctx, "k", "y"); !majorityRefusal(err) {
			return fmt.Errorf("put on m2: %v", err)
		}
		return nil
	})
}

// removePeersRefused: root on the cut-off member (servers[2]) tries to remove every other
// member, and each removal is refused by the majority gate.
func (ac *authCluster) removePeersRefused(t *testing.T, ctx context.Context, cutRoot *clientv3.Client) {
	t.Helper()
	for _, m := range must(cutRoot.MemberList(ctx))(t).Members {
		if m.ID != ac.servers[2].memberID {
			if _, err := cutRoot.MemberRemove(ctx, m.ID); !majorityRefusal(err) {
				t.Fatalf("member remove of %x on the cut-off member: %v, want the majority refusal", m.ID, err)
			}
		}
	}
}

// TestAuthCutOffMemberRefusesMemberChanges: a member cut off from the majority refuses every
// membership change (as etcd needs a quorum for one), so root there cannot remove the members
// it cannot reach, count itself a majority of one and reopen the gate: the revoked user's
// writes and root's auth changes stay refused (issue 41, defect 16).
func TestAuthCutOffMemberRefusesMemberChanges(t *testing.T) {
	ac := startAuthCluster(t, 3, func(c *Config) { c.AuthMajorityTimeout = minAuthMajorityTimeout })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cutRoot := userClient(t, ac.servers[2], "root", "rootpw")
	ac.cutOffPastTimeout(t, ctx)

	ac.removePeersRefused(t, ctx, cutRoot)
	if _, err := cutRoot.MemberAdd(ctx, []string{"http://127.0.0.1:1"}); !majorityRefusal(err) {
		t.Errorf("member add on the cut-off member: %v, want the majority refusal", err)
	}
	if _, err := cutRoot.MemberUpdate(ctx, ac.servers[0].memberID, []string{"http://127.0.0.1:1"}); !majorityRefusal(err) {
		t.Errorf("member update on the cut-off member: %v, want the majority refusal", err)
	}
	if _, err := cutRoot.MemberPromote(ctx, ac.servers[0].memberID); !majorityRefusal(err) {
		t.Errorf("member promote on the cut-off member: %v, want the majority refusal", err)
	}
	if n := len(must(cutRoot.MemberList(ctx))(t).Members); n != 3 {
		t.Errorf("the cut-off member lists %d members, want 3", n)
	}
	if _, err := ac.users[2].Put(ctx, "k", "stale"); !majorityRefusal(err) {
		t.Errorf("revoked user's write on the cut-off member: %v, want the majority refusal", err)
	}
	if _, err := cutRoot.RoleAdd(ctx, "x"); !majorityRefusal(err) {
		t.Errorf("auth change on the cut-off member: %v, want the majority refusal", err)
	}
}

// TestAuthCutOffMemberCannotEvictMajority: after the cut-off member's refused removals and
// auth changes, the heal leaves the majority's revocation in force everywhere and no member
// takes itself for removed (before, the removals made on the cut-off member spread and the
// majority members took themselves for removed).
func TestAuthCutOffMemberCannotEvictMajority(t *testing.T) {
	ac := startAuthCluster(t, 3, func(c *Config) { c.AuthMajorityTimeout = minAuthMajorityTimeout })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cutRoot := userClient(t, ac.servers[2], "root", "rootpw")
	ac.cutOffPastTimeout(t, ctx)
	ac.removePeersRefused(t, ctx, cutRoot)
	for i := range 3 {
		if _, err := cutRoot.RoleAdd(ctx, fmt.Sprint("pad", i)); !majorityRefusal(err) {
			t.Fatalf("auth change on the cut-off member: %v, want the majority refusal", err)
		}
	}
	ac.isolate(2, false)
	eventually(t, "every member has the majority's copy", 20*time.Second, func() error {
		if a, b := authRevOf(ac.servers[0]), authRevOf(ac.servers[2]); a != b {
			return fmt.Errorf("%+v vs %+v", a, b)
		}
		return nil
	})
	for i, u := range ac.users {
		eventually(t, fmt.Sprintf("m%d refuses the revoked user's write", i), 20*time.Second, func() error {
			if _, err := u.Put(ctx, "k", "undone"); rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(rpctypes.ErrGRPCPermissionDenied) {
				return fmt.Errorf("put on m%d: %v", i, err)
			}
			return nil
		})
	}
	for i, s := range ac.servers {
		if s.selfRemoved() {
			t.Errorf("m%d takes itself for removed after the heal", i)
		}
		if n := len(must(ac.users[i].MemberList(ctx))(t).Members); n != 3 {
			t.Errorf("m%d lists %d members, want 3", i, n)
		}
	}
}

// TestAuthRestartKeepsMajoritySilence: the write bound is "at most the timeout after the member
// last heard from the majority", across restarts: a member that was down while a permission
// was revoked, restarted with its data dir while still cut off, starts from when it last heard
// from the majority (<data-dir>/majority-heard), not with a fresh timeout of grace, so the
// revoked user's writes and root's auth changes are refused there; without the record (lost,
// or a member that never saved one) it starts as never having heard, and after the heal it
// serves writes again (issue 41, defect 16).
func TestAuthRestartKeepsMajoritySilence(t *testing.T) {
	const timeout = 5 * time.Second
	ac := startAuthCluster(t, 3, func(c *Config) { c.AuthMajorityTimeout = timeout })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg := ac.servers[2].cfg
	ac.users[2].Close()
	ac.servers[2].Close()
	root := userClient(t, ac.servers[0], "root", "rootpw")
	must(root.RoleRevokePermission(ctx, "kw", "k", ""))(t)
	time.Sleep(timeout + time.Second) // m2 last heard from the majority more than the timeout ago

	ac.isolate(2, true)
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u := userClient(t, s, "u", "upw")
	_, err = u.Put(ctx, "k", "after-revocation")
	if err == nil {
		t.Errorf("revoked user's write accepted on a restarted member that last heard from the majority more than --auth-majority-timeout ago")
	} else if rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(rpctypes.ErrGRPCPermissionDenied) && !majorityRefusal(err) {
		t.Fatalf("put: %v", err)
	}
	if _, err := userClient(t, s, "root", "rootpw").RoleAdd(ctx, "x"); err == nil {
		t.Errorf("auth change accepted on a restarted cut-off member whose last contact is older than the timeout")
	}
	s.Close()

	// Without the record: never heard from a majority, until the heal.
	if err := os.Remove(filepath.Join(cfg.DataDir, majorityFile)); err != nil {
		t.Fatal(err)
	}
	s, err = Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rootC := userClient(t, s, "root", "rootpw")
	if _, err := rootC.Put(ctx, "k", "x"); !majorityRefusal(err) {
		t.Errorf("root's write on a restarted cut-off member without a record: %v, want the majority refusal", err)
	}
	ac.isolate(2, false)
	eventually(t, "the healed member serves writes again", 20*time.Second, func() error {
		_, err := rootC.Put(ctx, "k", "x")
		return err
	})
}

// TestAuthRemoteDisableEnableDropsSimpleTokens: auth disable drops every simple token (as
// etcd's does, on every member, since it is a Raft entry), also on a member that adopts the
// copy made after a disable and re-enable on another member and so never sees auth off (the
// copy's enable revision differs from its own); likewise a user deleted and added again
// elsewhere with the same password hash loses the tokens issued here (issue 41, defect 16).
func TestAuthRemoteDisableEnableDropsSimpleTokens(t *testing.T) {
	ac := startAuthCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok := must(anonClient(t, ac.servers[2]).Authenticate(ctx, "u", "upw"))(t).Token
	var putWith func(m int, tok string) error
	put := func(m int) error {
		return putWith(m, tok)
	}
	putWith = func(m int, tok string) error {
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
	adopted := func() {
		eventually(t, "m2 adopts the copy", 20*time.Second, func() error {
			if a, b := authRevOf(ac.servers[0]), authRevOf(ac.servers[2]); a != b {
				return fmt.Errorf("%+v vs %+v", a, b)
			}
			return nil
		})
	}
	adopted()
	if err := put(2); err == nil {
		t.Errorf("m2's simple token issued before auth was disabled (and re-enabled) on m0 still accepted on m2")
	}

	// u deleted and added again on m0 with the same password hash (hashed_password).
	tok2 := must(anonClient(t, ac.servers[2]).Authenticate(ctx, "u", "upw"))(t).Token
	if err := putWith(2, tok2); err != nil {
		t.Fatal(err)
	}
	ac.servers[0].auth.mu.RLock()
	hash := ac.servers[0].auth.users["u"].Password
	ac.servers[0].auth.mu.RUnlock()
	ac.isolate(2, true)
	rootTok := must(anonClient(t, ac.servers[0]).Authenticate(ctx, "root", "rootpw"))(t).Token
	authC := pb.NewAuthClient(rawConn(t, ac.servers[0]))
	must(authC.UserDelete(withToken(ctx, rootTok), &pb.AuthUserDeleteRequest{Name: "u"}))(t)
	must(authC.UserAdd(withToken(ctx, rootTok), &pb.AuthUserAddRequest{Name: "u", HashedPassword: base64.StdEncoding.EncodeToString(hash)}))(t)
	must(authC.UserGrantRole(withToken(ctx, rootTok), &pb.AuthUserGrantRoleRequest{User: "u", Role: "kw"}))(t)
	ac.isolate(2, false)
	adopted()
	if err := putWith(2, tok2); err == nil {
		t.Errorf("m2's simple token of u issued before u was deleted and added again (same hash) on m0 still accepted on m2")
	}
}

// TestAuthCutOffMemberRefusesLeaseWrites: past --auth-majority-timeout a cut-off member
// refuses writes because it may not know of a revocation, and so lease keep-alives, grants
// and revocations (etcd's member without a leader refuses them), compaction and alarm
// changes: a user whose write permission on k was revoked on the majority side cannot keep
// its leased k alive through the cut-off member (issue 41, defect 16).
func TestAuthCutOffMemberRefusesLeaseWrites(t *testing.T) {
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
	// The server's answer on the stream: the majority refusal.
	tok := must(anonClient(t, ac.servers[2]).Authenticate(ctx, "u", "upw"))(t).Token
	ka, err := pb.NewLeaseClient(rawConn(t, ac.servers[2])).LeaseKeepAlive(withToken(ctx, tok))
	if err != nil {
		t.Fatal(err)
	}
	if err := ka.Send(&pb.LeaseKeepAliveRequest{ID: int64(l.ID)}); err != nil {
		t.Fatal(err)
	}
	if resp, err := ka.Recv(); !majorityRefusal(err) {
		t.Errorf("revoked user's lease keep-alive on the cut-off member: %+v %v, want the majority refusal", resp, err)
	}
	// clientv3 retries an unavailable member until its context ends, as against etcd's
	// member without a leader.
	kctx, kcancel := context.WithTimeout(ctx, 2*time.Second)
	defer kcancel()
	if _, err := u.KeepAliveOnce(kctx, l.ID); err == nil {
		t.Errorf("revoked user's lease keep-alive accepted on the cut-off member past --auth-majority-timeout (its writes are refused)")
	}
	if _, err := u.Grant(ctx, 5); !majorityRefusal(err) {
		t.Errorf("lease grant on the cut-off member: %v, want the majority refusal", err)
	}
	if _, err := u.Revoke(ctx, l.ID); !majorityRefusal(err) {
		t.Errorf("lease revoke on the cut-off member: %v, want the majority refusal", err)
	}
	cutRoot := userClient(t, ac.servers[2], "root", "rootpw")
	if _, err := cutRoot.Compact(ctx, 1); !majorityRefusal(err) {
		t.Errorf("compaction on the cut-off member: %v, want the majority refusal", err)
	}
	if _, err := cutRoot.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: ac.servers[2].memberID, Alarm: pb.AlarmType_NOSPACE}); !majorityRefusal(err) {
		t.Errorf("alarm disarm on the cut-off member: %v, want the majority refusal", err)
	}
}

// TestAuthJWTOldRevisionClusterWide: a JWT issued on one member before a password change made
// on another is refused on both ("auth revision is old", as etcd refuses it), and a token
// issued after the change is accepted on both: the auth revision orders every change
// cluster-wide, so a token's age is judged the same on every member (issue 41, defect 16).
func TestAuthJWTOldRevisionClusterWide(t *testing.T) {
	priv, pub := writeJWTKeys(t, "ES256")
	servers, _ := startProxiedCluster(t, 2, fastAuth, func(c *Config) {
		c.AuthToken = "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=ES256,ttl=10m"
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func(m int, tok string) error {
		_, err := pb.NewKVClient(rawConn(t, servers[m])).Put(withToken(ctx, tok), &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
		return err
	}
	m0, m1 := anonClient(t, servers[0]), anonClient(t, servers[1])
	// Users and roles first, and m1 has them before auth is enabled: enabling is then a
	// copy of its own on m1, as it is when an operator enables auth after setting it up.
	must(m0.RoleAdd(ctx, "kw"))(t)
	must(m0.RoleGrantPermission(ctx, "kw", "k", "", clientv3.PermissionType(authpb.READWRITE)))(t)
	must(m0.UserAdd(ctx, "u", "upw"))(t)
	must(m0.UserGrantRole(ctx, "u", "kw"))(t)
	must(m0.UserAdd(ctx, "root", "rootpw"))(t)
	must(m0.UserGrantRole(ctx, "root", "root"))(t)
	eventually(t, "m1 has root", 20*time.Second, func() error {
		r, err := m1.UserGet(ctx, "root")
		if err == nil && len(r.Roles) == 0 {
			err = errors.New("root without the root role")
		}
		return err
	})
	must(m0.AuthEnable(ctx))(t)
	eventually(t, "m1 enables auth", 20*time.Second, func() error {
		_, err := m1.Authenticate(ctx, "u", "upw")
		return err
	})
	old := must(m1.Authenticate(ctx, "u", "upw"))(t).Token
	for m := range servers {
		if err := put(m, old); err != nil {
			t.Fatalf("m1's token on m%d before the change: %v", m, err)
		}
	}

	root := userClient(t, servers[0], "root", "rootpw")
	must(root.UserChangePassword(ctx, "u", "upw2"))(t)
	wantErr(t, "m1's token on m0 after the password change there", put(0, old), rpctypes.ErrGRPCAuthOldRevision)
	eventually(t, "m1 learns the password change", 20*time.Second, func() error {
		if _, err := m1.Authenticate(ctx, "u", "upw2"); err != nil {
			return err
		}
		return nil
	})
	wantErr(t, "m1's token on m1 after the password change", put(1, old), rpctypes.ErrGRPCAuthOldRevision)

	// Tokens issued after the change, on either member, are good on both.
	for i, c := range []*clientv3.Client{m0, m1} {
		tok := must(c.Authenticate(ctx, "u", "upw2"))(t).Token
		for m := range servers {
			if err := put(m, tok); err != nil {
				t.Errorf("m%d's token issued after the change, on m%d: %v", i, m, err)
			}
		}
	}
}
