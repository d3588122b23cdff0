package replication

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/continuum-project/continuum/internal/kv/mvcc"
	"github.com/continuum-project/continuum/internal/testenv"
)

type member struct {
	name  string
	url   string
	ln    net.Listener
	store *mvcc.Store
	repl  *Replicator
	grpc  *grpc.Server
}

// startCluster starts members named by the keys of mesh, each pulling from the members listed
// for it, on loopback; everything stops at cleanup.
func startCluster(t *testing.T, mesh map[string][]string) map[string]*member {
	t.Helper()
	return startClusterWith(t, mesh, nil)
}

// startClusterWith is startCluster with tweak applied to every member's configuration.
func startClusterWith(t *testing.T, mesh map[string][]string, tweak func(*Config)) map[string]*member {
	t.Helper()
	ms := map[string]*member{}
	for name := range mesh {
		ms[name] = listenMember(t, name)
	}
	for name, peers := range mesh {
		var urls []string
		for _, p := range peers {
			urls = append(urls, ms[p].url)
		}
		startMember(t, ms[name], urls, len(mesh), tweak)
	}
	return ms
}

// listenMember returns member name with its listener on a free loopback port (startMember
// starts it).
func listenMember(t *testing.T, name string) *member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &member{name: name, ln: ln, url: "http://" + ln.Addr().String()}
}

// startMember opens m's store and starts its replicator, serving on m.ln and pulling from peer
// URLs; tweak may change the configuration. It stops at cleanup.
func startMember(t *testing.T, m *member, peers []string, size int, tweak func(*Config)) {
	t.Helper()
	cfg := mvcc.DefaultConfig(t.TempDir())
	cfg.Replicated = true
	store, err := mvcc.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.store = store
	rc := DefaultConfig(store)
	rc.Name, rc.PeerURLs, rc.ClusterToken = m.name, []string{m.url}, "test"
	rc.Heartbeat = 100 * time.Millisecond
	rc.ClusterSize = size
	rc.Compressor = CompressorS2
	rc.Peers = peers
	if tweak != nil {
		tweak(&rc)
	}
	if m.repl, err = New(rc); err != nil {
		t.Fatal(err)
	}
	m.grpc = grpc.NewServer(append([]grpc.ServerOption{grpc.ForceServerCodec(wireCodec{})}, m.repl.ServerOptions()...)...)
	m.repl.Register(m.grpc)
	go m.grpc.Serve(m.ln)
	m.repl.Start()
	t.Cleanup(func() {
		m.repl.Close()
		m.grpc.Stop()
		m.store.Close()
	})
}

func putKV(t *testing.T, s *mvcc.Store, k, v string) {
	t.Helper()
	if _, err := s.Put(context.Background(), &pb.PutRequest{Key: []byte(k), Value: []byte(v)}); err != nil {
		t.Fatal(err)
	}
}

// waitConverged waits until every member holds the same changes and the same data.
func waitConverged(t *testing.T, ms map[string]*member, timeout time.Duration) {
	t.Helper()
	testenv.EventuallyNoError(t, timeout, "the members to converge", func() error {
		var first *member
		for _, m := range ms {
			if first == nil {
				first = m
				continue
			}
			a, b := first.store.VersionVector(), m.store.VersionVector()
			ha, _, _, _ := first.store.HashKV(0)
			hb, _, _, _ := m.store.HashKV(0)
			if !a.Covers(b) || !b.Covers(a) || ha != hb {
				return fmt.Errorf("%s %v hash %x vs %s %v hash %x", first.name, a, ha, m.name, b, hb)
			}
		}
		return nil
	})
}

func TestFullMeshConverges(t *testing.T) {
	// The heartbeat only keeps idle streams alive; a long one keeps a stalled CPU (a busy CI
	// machine, -race) from reopening a stream for silence in the middle of the count below,
	// which would resend what that stream had in flight.
	ms := startClusterWith(t, map[string][]string{"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a", "b"}},
		func(c *Config) { c.Heartbeat = 2 * time.Second })
	// Once every stream is up, each member tells its peers to leave out the changes it gets
	// from their origins directly, so each change crosses the network once per member. Wait
	// until every stream runs with that final set: one reopened later would have been sent
	// changes twice.
	testenv.EventuallyNoError(t, 30*time.Second, "all six streams up, each leaving out the third member", func() error {
		for name, m := range ms {
			for _, p := range m.repl.Peers() {
				if !p.Connected || len(p.Direct) != 1 {
					return fmt.Errorf("%s's stream from %s: connected %v, leaving out %v", name, p.URL, p.Connected, p.Direct)
				}
			}
		}
		return nil
	})
	before := map[string]uint64{}
	for name, m := range ms {
		for _, p := range m.repl.Peers() {
			before[name] += p.Received
		}
	}
	for i := 0; i < 50; i++ {
		for _, name := range []string{"a", "b", "c"} {
			putKV(t, ms[name].store, fmt.Sprintf("k%d", i%7), fmt.Sprintf("%s-%d", name, i))
		}
	}
	waitConverged(t, ms, 30*time.Second)
	// A batch's changes are counted after they are applied, acked and accounted, so the store
	// can hold them a moment before the counters do: wait for the counts, not just the data.
	for name, m := range ms {
		testenv.EventuallyNoError(t, 30*time.Second, "member "+name+" to count the others' changes", func() error {
			var got uint64
			for _, p := range m.repl.Peers() {
				got += p.Received
			}
			// 100 changes were made elsewhere; a few more may come twice around a reopen, and a
			// batch applied just as its stream was reopened is not counted.
			if d := got - before[name]; d < 90 || d > 110 {
				return fmt.Errorf("received %d changes for the 100 made by the others", d)
			}
			return nil
		})
	}
	if n := len(ms["a"].repl.Members()); n != 3 {
		t.Fatalf("a knows %d members, want 3: %+v", n, ms["a"].repl.Members())
	}
}

func TestPartialMeshForwards(t *testing.T) {
	// a and c never talk to each other: b forwards.
	ms := startCluster(t, map[string][]string{"a": {"b"}, "b": {"a", "c"}, "c": {"b"}})
	putKV(t, ms["a"].store, "from-a", "1")
	putKV(t, ms["c"].store, "from-c", "2")
	waitConverged(t, ms, 10*time.Second)
	r, err := ms["c"].store.Range(&pb.RangeRequest{Key: []byte("from-a")})
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "1" {
		t.Fatalf("c did not get a's write through b: %+v %v", r, err)
	}
	// Remote changes are ordinary events with this member's own revisions.
	if r.Kvs[0].ModRevision <= 1 {
		t.Fatalf("remote version has revision %d", r.Kvs[0].ModRevision)
	}
}

func TestPeerRestartCatchesUp(t *testing.T) {
	ms := startCluster(t, map[string][]string{"a": {"b"}, "b": {"a"}})
	putKV(t, ms["a"].store, "x", "1")
	waitConverged(t, ms, 10*time.Second)
	// b's listener goes away; a keeps writing; b's server comes back on the same address.
	b := ms["b"]
	b.grpc.Stop()
	for i := 0; i < 20; i++ {
		putKV(t, ms["a"].store, fmt.Sprintf("y%d", i), "v")
	}
	ln, err := net.Listen("tcp", b.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b.ln = ln
	b.grpc = grpc.NewServer(grpc.ForceServerCodec(wireCodec{}))
	b.repl.Register(b.grpc)
	go b.grpc.Serve(ln)
	waitConverged(t, ms, 10*time.Second)
	// a's own stream from b comes back too (its puller retries with backoff).
	testenv.Eventually(t, 10*time.Second, "a's stream from b back", func() bool {
		p := ms["a"].repl.Peers()[0]
		return p.Connected && p.Member.Name == "b"
	})
}

func TestWrongClusterTokenRefused(t *testing.T) {
	ms := startCluster(t, map[string][]string{"a": {}})
	cfg := mvcc.DefaultConfig(t.TempDir())
	cfg.Replicated = true
	store, err := mvcc.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rc := DefaultConfig(store)
	rc.Name, rc.ClusterToken, rc.Peers = "stranger", "other", []string{ms["a"].url}
	r, err := New(rc)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	defer r.Close()
	testenv.Eventually(t, 30*time.Second, "an error from a peer with another cluster token",
		func() bool { return r.Peers()[0].LastErr != "" })
	if p, want := r.Peers()[0], "cluster token"; !strings.Contains(p.LastErr, want) {
		t.Fatalf("error %q does not mention the %s", p.LastErr, want)
	}
}

// TestLogCollectedOnceEveryMemberHasIt: compaction drops change-log entries only for changes every
// member holds; a member that lacks them afterwards is told it needs a snapshot, and replication
// of new writes goes on.
func TestLogCollectedOnceEveryMemberHasIt(t *testing.T) {
	ms := startCluster(t, map[string][]string{"a": {"b"}, "b": {"a"}})
	a := ms["a"]
	for i := 0; i < 30; i++ {
		putKV(t, a.store, fmt.Sprintf("k%d", i%5), fmt.Sprint(i))
	}
	waitConverged(t, ms, 10*time.Second)
	testenv.Eventually(t, 30*time.Second, "a's stable vector to cover its own",
		func() bool { return a.repl.Stable().Covers(a.store.VersionVector()) })
	a.store.SetStable(a.repl.Stable())
	rev := a.store.Rev()
	if err := a.store.Compact(context.Background(), rev, true); err != nil {
		t.Fatal(err)
	}
	n := 0 // below the compaction revision (the change at it stays, as its version does)
	if _, err := a.store.ReadLog(1, rev-1, func(*mvcc.Change) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d changes left in a's log after compacting what both members hold", n)
	}
	if _, err := a.store.LogStart(mvcc.VersionVector{}); !errors.Is(err, mvcc.ErrLogTruncated) {
		t.Fatalf("a member holding nothing: %v, want ErrLogTruncated (needs a snapshot)", err)
	}
	putKV(t, a.store, "after", "compaction")
	waitConverged(t, ms, 10*time.Second)

	// A new member with an empty store joins through a: a snapshot, then the log after it.
	cfg := mvcc.DefaultConfig(t.TempDir())
	cfg.Replicated = true
	store, err := mvcc.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rc := DefaultConfig(store)
	rc.Name, rc.ClusterToken, rc.Peers, rc.Heartbeat = "c", "test", []string{a.url}, 100*time.Millisecond
	c, err := New(rc)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Close()
	ms["c"] = &member{name: "c", store: store, repl: c}
	defer delete(ms, "c") // its store is closed here, not by startCluster's cleanup
	putKV(t, a.store, "after", "join")
	waitConverged(t, map[string]*member{"a": a, "c": ms["c"]}, 10*time.Second)
	if r, err := store.Range(&pb.RangeRequest{Key: []byte("k0")}); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("the new member lacks a key it only got through the snapshot: %+v %v", r, err)
	}
}
