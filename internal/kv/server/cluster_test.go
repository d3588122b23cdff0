package server

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// freePorts reserves n loopback ports for a cluster whose members must know each other's URLs
// before they start. (A port can be taken by someone else between Close and the server's
// Listen; on loopback in tests that has not been seen.)
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// startCluster starts n members named m0.. with peers as given (nil: full mesh) and returns a
// client per member.
func startCluster(t *testing.T, n int, peers map[string][]string) ([]*Server, []*clientv3.Client) {
	t.Helper()
	addrs := freePorts(t, n)
	ic := map[string][]string{}
	for i, a := range addrs {
		ic[fmt.Sprintf("m%d", i)] = []string{"http://" + a}
	}
	var servers []*Server
	var clis []*clientv3.Client
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		s, cli := startKV(t, func(c *Config) {
			c.Name = name
			c.InitialCluster = ic
			c.InitialClusterToken = "test"
			c.ListenPeerURLs = ic[name]
			c.Peers = peers[name]
		})
		servers = append(servers, s)
		clis = append(clis, cli)
	}
	return servers, clis
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := clis[2].Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) == 1 && string(r.Kvs[0].Value) == "from-m0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("m2 never saw m0's write")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// HashKV converges.
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
