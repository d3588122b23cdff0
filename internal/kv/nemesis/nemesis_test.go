package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testenv"
)

var bin string

func TestMain(m *testing.M) {
	if testbed.IsLauncher() {
		testbed.LauncherMain()
	}
	path, cleanup, err := testenv.Binary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

const members = 3

type member struct {
	name, node, addr string
	cli              *clientv3.Client

	mu      sync.Mutex
	acked   map[string]string // unique keys acknowledged by this member
	lastRev int64
}

func TestNemesisRealProcesses(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("a minute of faults")
	}
	topo, err := testbed.ParseTopology("nemesis.yaml", []byte(`
nodes: [{name: n1}, {name: n2}, {name: n3}]
links:
  - {between: [n1, n2], delay: 5ms}
  - {between: [n2, n3], delay: 5ms}
  - {between: [n1, n3], delay: 5ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := testbed.Up(topo, testbed.Options{Name: fmt.Sprintf("nem%d", os.Getpid()%100000), StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Down(); err != nil {
			t.Errorf("testbed down: %v", err)
		}
	})

	ms := make([]*member, members)
	var cluster []string
	for i := range ms {
		node := fmt.Sprintf("n%d", i+1)
		a, _ := tb.NodeAddr(node)
		ms[i] = &member{name: fmt.Sprintf("m%d", i+1), node: node, addr: a.String(), acked: map[string]string{}}
		cluster = append(cluster, fmt.Sprintf("%s=http://%s:2380", ms[i].name, a))
	}
	data := t.TempDir()
	for _, m := range ms {
		_, err := tb.Start(testbed.ProcSpec{Name: m.name, Node: m.node, LogDir: data, Args: []string{bin, "kv",
			"--name", m.name, "--data-dir", filepath.Join(data, m.name),
			"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://" + m.addr + ":2379",
			"--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", "http://" + m.addr + ":2380",
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-token", "nemesis"}})
		if err != nil {
			t.Fatal(err)
		}
		node := m.node
		m.cli, err = clientv3.New(clientv3.Config{
			Endpoints: []string{m.addr + ":2379"}, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
			// The client sits next to its member: it dials from inside the member's node, so
			// partitions cut members from each other, not clients from their member.
			DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return tb.Dial(ctx, node, "tcp", addr)
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.cli.Close() })
	}
	for _, m := range ms {
		waitServing(t, m)
	}

	// Writers: unique keys (must all survive) and a few contended keys (must converge).
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			write(ctx, t, m, i)
		}()
	}

	// The nemesis: a fault a second for 20 s, each undone before the next.
	rng := rand.New(rand.NewPCG(7, 11))
	var log []string
	for step := 0; step < 20; step++ {
		m := ms[rng.IntN(members)]
		var undo testbed.Fault
		var f testbed.Fault
		switch rng.IntN(4) {
		case 0:
			f = testbed.Fault{Action: "partition", Node: m.node}
			undo = testbed.Fault{Action: "heal"}
		case 1:
			a, b := ms[rng.IntN(members)], ms[rng.IntN(members)]
			if a == b {
				continue
			}
			f = testbed.Fault{Action: "partition", Link: []string{a.node, b.node}}
			undo = testbed.Fault{Action: "heal"}
		case 2:
			f = testbed.Fault{Action: "kill", Component: m.name}
			undo = testbed.Fault{Action: "restart", Component: m.name}
		case 3:
			f = testbed.Fault{Action: "pause", Node: m.node}
			undo = testbed.Fault{Action: "resume", Node: m.node}
		}
		if _, err := tb.Inject(f); err != nil {
			t.Fatalf("inject %+v: %v", f, err)
		}
		time.Sleep(time.Duration(500+rng.IntN(700)) * time.Millisecond) // the fault lasts a while: that is the test
		if _, err := tb.Inject(undo); err != nil {
			t.Fatalf("undo %+v: %v", undo, err)
		}
		log = append(log, fmt.Sprintf("%s %s%s%v", f.Action, f.Node, f.Component, f.Link))
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	wg.Wait()
	t.Logf("faults: %s", strings.Join(log, "; "))

	// Convergence: equal HashKV on every member, stable for a second, within 30 s.
	deadline := time.Now().Add(30 * time.Second)
	var stableSince time.Time
	for {
		hashes, err := hashAll(ms)
		equal := err == nil && hashes[0] == hashes[1] && hashes[1] == hashes[2]
		switch {
		case equal && stableSince.IsZero():
			stableSince = time.Now()
		case !equal:
			stableSince = time.Time{}
		}
		if equal && time.Since(stableSince) > time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("members did not converge in 30 s after the faults: hashes %x err %v", hashes, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// No acknowledged write lost: every unique key acknowledged by any member is on every member.
	total := 0
	for _, w := range ms {
		for k, v := range w.acked {
			total++
			for _, r := range ms {
				resp, err := r.cli.Get(context.Background(), k, clientv3.WithSerializable())
				if err != nil {
					t.Fatalf("get %s on %s: %v", k, r.name, err)
				}
				if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != v {
					t.Fatalf("write %s=%s acknowledged by %s is missing on %s: %+v", k, v, w.name, r.name, resp.Kvs)
				}
			}
		}
	}
	if total < 100 {
		t.Fatalf("only %d writes were acknowledged during the run: the test exercised too little", total)
	}
	t.Logf("%d acknowledged unique writes present on all %d members", total, members)
}

func waitServing(t *testing.T, m *member) {
	t.Helper()
	testenv.EventuallyNoError(t, 60*time.Second, m.name+" to serve", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := m.cli.Get(ctx, "health")
		return err
	})
}

// write puts unique and contended keys on m until ctx ends, checking read-your-writes and
// monotonic revisions on m for every acknowledged write.
func write(ctx context.Context, t *testing.T, m *member, idx int) {
	for n := 0; ctx.Err() == nil; n++ {
		k, v := fmt.Sprintf("u/%s/%d", m.name, n), fmt.Sprintf("%s-%d", m.name, n)
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		put, err := m.cli.Put(rctx, k, v)
		if err == nil {
			_, _ = m.cli.Put(rctx, fmt.Sprintf("c/%d", n%8), v)
			get, gerr := m.cli.Get(rctx, k, clientv3.WithSerializable())
			if gerr == nil {
				if len(get.Kvs) != 1 || string(get.Kvs[0].Value) != v {
					t.Errorf("%s: read-your-writes: got %+v after put %s=%s", m.name, get.Kvs, k, v)
				}
				m.mu.Lock()
				if get.Header.Revision < m.lastRev || put.Header.Revision < m.lastRev {
					t.Errorf("%s: revision went back from %d to %d", m.name, m.lastRev, get.Header.Revision)
				}
				m.lastRev = get.Header.Revision
				m.mu.Unlock()
			}
			m.mu.Lock()
			m.acked[k] = v
			m.mu.Unlock()
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func hashAll(ms []*member) ([]uint32, error) {
	var out []uint32
	for _, m := range ms {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := m.cli.HashKV(ctx, m.addr+":2379", 0)
		cancel()
		if err != nil {
			return out, fmt.Errorf("%s: %w", m.name, err)
		}
		out = append(out, r.Hash)
	}
	return out, nil
}
