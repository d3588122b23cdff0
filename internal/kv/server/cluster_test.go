package server

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/kv/kvclient"
	"github.com/continuum-project/continuum/internal/testenv"
)

// freePorts picks n loopback addresses for a cluster whose members must know each other's URLs
// before they start (internal/freeport: no other process is given them). startCluster still
// starts again on new ports if one was taken all the same.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = testenv.FreeAddr(t)
	}
	return out
}

// startCluster starts n members named m0.. with peers as given (nil: full mesh) and returns a
// client per member.
func startCluster(t *testing.T, n int, peers map[string][]string) ([]*Server, []*clientv3.Client) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addrs := freePorts(t, n)
		ic := map[string][]string{}
		for i, a := range addrs {
			ic[fmt.Sprintf("m%d", i)] = []string{"http://" + a}
		}
		var servers []*Server
		var clis []*clientv3.Client
		var err error
		for i := 0; i < n && err == nil; i++ {
			name := fmt.Sprintf("m%d", i)
			var s *Server
			var cli *clientv3.Client
			s, cli, err = tryStartKV(t, func(c *Config) {
				c.Name = name
				c.InitialCluster = ic
				c.InitialClusterToken = "test"
				c.ListenPeerURLs = ic[name]
				c.Peers = peers[name]
			})
			if err == nil {
				servers = append(servers, s)
				clis = append(clis, cli)
			}
		}
		closeAll := func() {
			for i := range servers {
				clis[i].Close()
				servers[i].Close()
			}
		}
		if err == nil {
			t.Cleanup(closeAll)
			return servers, clis
		}
		closeAll()
		if attempt == 3 || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; again on other ports", attempt, err)
	}
}

func TestClusterReplicatesAndListsMembers(t *testing.T) {
	servers, clis := startCluster(t, 3, map[string][]string{"m0": {"m1"}, "m1": {"m0", "m2"}, "m2": {"m1"}})
	ctx := ctxT(t)
	if _, err := clis[0].Put(ctx, "k", "from-m0"); err != nil {
		t.Fatal(err)
	}
	if _, err := clis[2].Put(ctx, "j", "from-m2"); err != nil {
		t.Fatal(err)
	}
	// Watch on m2 sees m0's write (through m1) as an ordinary event.
	testenv.EventuallyNoError(t, 30*time.Second, "m2 to see m0's write", func() error {
		r, err := clis[2].Get(ctx, "k")
		if err == nil && (len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "from-m0") {
			err = fmt.Errorf("m2 has %+v", r.Kvs)
		}
		return err
	})
	// HashKV converges.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var hashes []uint32
		for _, s := range servers {
			h, _, _, err := s.Store().HashKV(0)
			if err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, h)
		}
		if hashes[0] == hashes[1] && hashes[1] == hashes[2] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hashes differ: %x", hashes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Every member lists all three, with the same cluster id; once heard from, with the id a
	// member reports in its own headers.
	for {
		ml, err := clis[0].MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		ok := len(ml.Members) == 3
		for _, m := range ml.Members {
			names = append(names, m.Name)
			if len(m.PeerURLs) != 1 {
				ok = false
			}
			if m.Name == "m1" && m.ID != servers[1].memberID {
				ok = false // not heard from yet
			}
		}
		sort.Strings(names)
		if ok && strings.Join(names, ",") == "m0,m1,m2" && ml.Header.ClusterId == servers[2].clusterID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member list: %+v", ml.Members)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClusterMetrics(t *testing.T) {
	servers, clis := startCluster(t, 2, nil)
	if _, err := clis[1].Put(ctxT(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyNoError(t, 30*time.Second, "the replication metrics", func() error {
		rec := httptest.NewRecorder()
		servers[0].metrics.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body := rec.Body.String()
		for _, want := range []string{`continuum_kv_replication_peer_connected{peer="m1"} 1`,
			`continuum_kv_replication_peer_applied_changes_total{peer="m1"} 1`,
			"continuum_kv_replication_apply_delay_seconds_count 1",
			`continuum_kv_replication_peer_clock_offset_exceeded_total{peer="m1"} 0`,
			`continuum_kv_replication_peer_clock_ahead_seconds{peer="m1"}`} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("no %s in:\n%s", want, grepLines(body, "replication"))
			}
		}
		return nil
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestClusterFlagsValidated(t *testing.T) {
	ic := map[string][]string{"a": {"http://127.0.0.1:1"}, "b": {"http://127.0.0.1:2"}}
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string
	}{
		"no peer listener": {func(c *Config) { c.Name = "a"; c.InitialCluster = ic }, "--listen-peer-urls is required"},
		"not a member": {func(c *Config) {
			c.Name = "z"
			c.InitialCluster = ic
			c.ListenPeerURLs = []string{"http://127.0.0.1:0"}
		}, "does not name this member"},
		"unknown peer": {func(c *Config) {
			c.Name = "a"
			c.InitialCluster = ic
			c.ListenPeerURLs = []string{"http://127.0.0.1:0"}
			c.Peers = []string{"q"}
		}, `--peers names "q"`},
		"bad state": {func(c *Config) {
			c.Name = "a"
			c.InitialCluster = ic
			c.ListenPeerURLs = []string{"http://127.0.0.1:0"}
			c.InitialClusterState = "old"
		}, "want new or existing"},
	} {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		tc.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
	if _, err := ParseInitialCluster("a=http://x:1,b"); err == nil || !strings.Contains(err.Error(), `entry "b"`) {
		t.Errorf("bad --initial-cluster: %v", err)
	}
}

func TestDurabilityAndHolders(t *testing.T) {
	servers, clis := startCluster(t, 3, nil)
	ctx := ctxT(t)
	with := func(k, timeout string) context.Context {
		c := metadata.AppendToOutgoingContext(ctx, "continuum-durability", k)
		if timeout != "" {
			c = metadata.AppendToOutgoingContext(c, "continuum-durability-timeout", timeout)
		}
		return c
	}
	put, err := clis[0].Put(with("3", ""), "k", "v")
	if err != nil {
		t.Fatalf("put with durability 3 on a healthy cluster: %v", err)
	}
	// Acknowledged: all three hold it, as the status service tells.
	conn, err := grpc.NewClient(strings.TrimPrefix(servers[0].ClientURLs()[0], "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hr, err := kvclient.QueryHolders(ctx, conn, put.Header.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if len(hr.Holders) != 3 {
		t.Fatalf("holders: %+v", hr.Holders)
	}
	for _, h := range hr.Holders {
		if !h.Has {
			t.Fatalf("member %s does not hold an acknowledged 3-durable write: %+v", h.Member.Name, hr.Holders)
		}
	}
	if _, err := kvclient.QueryHolders(ctx, conn, put.Header.Revision+100); status.Code(err) != codes.OutOfRange {
		t.Fatalf("holders of a future revision: %v, want OutOfRange", err)
	}

	// Bad requests are refused before writing.
	if _, err := clis[0].Put(with("4", ""), "k", "x"); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "from 1 to 3") {
		t.Fatalf("durability 4 of 3 members: %v", err)
	}
	if _, err := clis[0].Put(with("2", "soon"), "k", "x"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad timeout: %v", err)
	}

	// With one member gone, 2 is reachable and 3 is not: a clear error, and the write stays.
	servers[2].Close()
	if _, err := clis[0].Put(with("2", "5s"), "k2", "v"); err != nil {
		t.Fatalf("durability 2 with 2 members up: %v", err)
	}
	_, err = clis[0].Put(with("3", "300ms"), "k3", "v")
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "only 2 of 3 members") {
		t.Fatalf("durability 3 with a member down: %v", err)
	}
	if r, err := clis[0].Get(ctx, "k3"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("the write that was not 3-durable in time is not kept locally: %+v %v", r, err)
	}
}

// TestMemberAddRemove: a member started later joins through MemberAdd on one member (the others
// learn it through the replication streams), writes flow both ways, and MemberRemove makes the
// asked member forget it, also after a restart.
func TestMemberAddRemove(t *testing.T) {
	addrs := freePorts(t, 2)
	ic := map[string][]string{"m0": {"http://" + addrs[0]}, "m1": {"http://" + addrs[1]}}
	dir0 := t.TempDir()
	start := func(name, dir string, ic map[string][]string) (*Server, *clientv3.Client) {
		return startKV(t, func(c *Config) {
			c.Name, c.DataDir = name, dir
			c.InitialCluster, c.InitialClusterToken, c.ListenPeerURLs = ic, "test", ic[name]
		})
	}
	s0, c0 := start("m0", dir0, ic)
	_, c1 := start("m1", t.TempDir(), ic)
	ctx := ctxT(t)

	// m2 joins as with etcd: m0 is asked to add it, then m2 starts naming itself and m0. (Started
	// first, m2 would already be known to m0 through its replication stream, and the add would
	// answer that the peer URLs exist.)
	newPeer := "http://" + freePorts(t, 1)[0]
	add, err := c0.MemberAdd(ctx, []string{newPeer})
	if err != nil {
		t.Fatal(err)
	}
	if len(add.Member.PeerURLs) != 1 || add.Member.PeerURLs[0] != newPeer {
		t.Fatalf("member add answered %+v", add.Member)
	}
	if _, err := c0.MemberAdd(ctx, []string{newPeer}); err == nil || !strings.Contains(err.Error(), "Peer URLs already exists") {
		t.Fatalf("adding the same peer twice: %v", err)
	}
	ic2 := map[string][]string{"m0": ic["m0"], "m2": {newPeer}}
	s2, c2 := startKV(t, func(c *Config) {
		c.Name, c.DataDir = "m2", t.TempDir()
		c.InitialCluster, c.InitialClusterToken, c.ListenPeerURLs = ic2, "test", ic2["m2"]
		c.InitialClusterState = "existing"
	})
	if _, err := c2.Put(ctx, "from-m2", "x"); err != nil {
		t.Fatal(err)
	}
	lease, err := c2.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Put(ctx, "m2-leased", "x", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c1.Get(ctx, "from-m2")
		rl, errl := c1.Get(ctx, "m2-leased")
		ml, err2 := c1.MemberList(ctx)
		if err == nil && err2 == nil && errl == nil && len(r.Kvs) == 1 && len(rl.Kvs) == 1 && len(ml.Members) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("m1 did not get m2's write through m0 or does not list it: %+v %+v %v %v", r, ml, err, err2)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// m0 forgets m2, and still does after a restart.
	var m2ID uint64
	ml, _ := c0.MemberList(ctx)
	for _, m := range ml.Members {
		if m.Name == "m2" {
			m2ID = m.ID
		}
	}
	if _, err := c0.MemberRemove(ctx, m2ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c0.MemberRemove(ctx, m2ID); err == nil || !strings.Contains(err.Error(), "member not found") {
		t.Fatalf("removing twice: %v", err)
	}
	if _, err := c0.MemberRemove(ctx, s0.memberID); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("removing itself: %v", err)
	}
	listed := func(c *clientv3.Client) bool {
		ml, err := c.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ml.Members {
			if m.ID == m2ID {
				return true
			}
		}
		return false
	}
	if listed(c0) {
		t.Fatal("m0 still lists m2 after removing it")
	}
	// The removal spreads: m1, which learned of m2 through m0, forgets it too, and m2 learns
	// that it was removed and stops replicating.
	deadline = time.Now().Add(10 * time.Second)
	for listed(c1) || !s2.selfRemoved() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: m1 lists m2 %v, m2 knows it was removed %v", listed(c1), s2.selfRemoved())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// m2's lease can no longer be kept alive: its keys go on every member; its plain keys stay.
	deadline = time.Now().Add(10 * time.Second)
	for _, c := range []*clientv3.Client{c0, c1} {
		for {
			rl, err := c.Get(ctx, "m2-leased")
			r, err2 := c.Get(ctx, "from-m2")
			if err == nil && err2 == nil && len(rl.Kvs) == 0 && len(r.Kvs) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after m2's removal: leased key %+v, plain key %+v (%v %v)", rl, r, err, err2)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := c2.Put(ctx, "after-removal", "x"); err != nil {
		t.Fatalf("a removed member still serves its clients: %v", err)
	}
	if ps := s2.repl.Peers(); len(ps) != 0 {
		t.Fatalf("removed m2 still pulls from %+v", ps)
	}
	c0.Close()
	s0.Close()
	_, c0 = start("m0", dir0, ic)
	if listed(c0) {
		t.Fatal("m0 lists m2 again after a restart")
	}
}

func (s *Server) selfRemoved() bool {
	s.mship.mu.Lock()
	defer s.mship.mu.Unlock()
	return s.mship.SelfRemoved
}
