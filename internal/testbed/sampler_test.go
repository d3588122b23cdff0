package testbed

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testbed/fabric"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestSamplerReportsNetwork: between two sampling rounds the network report counts the pings
// that crossed the fabric on both link directions, their lateness, the configured loss as an
// explained drop, and the fabric's own CPU.
func TestSamplerReportsNetwork(t *testing.T) {
	tb := startTestbed(t, `
nodes: [{name: a}, {name: b}]
links: [{between: [a, b], delay: 1ms, loss: 30%}]
`)
	p := &Platform{tb: tb}
	if rep := p.Network(); len(rep.Intervals) != 0 {
		t.Fatalf("report before any sampling: %+v", rep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var rounds atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.Sample(ctx, 100*time.Millisecond, func([]Sample) { rounds.Add(1) })
	}()
	// The pings count from the baseline round on.
	testenv.Eventually(t, 30*time.Second, "the sampler's first round", func() bool { return rounds.Load() >= 1 })
	// Ping exits 1 when replies are missing, as they will be with 30% loss each way.
	_, _ = execIn(t, tb, "a", "ping", "-n", "-q", "-c", "60", "-i", "0.01", "-W", "1", "b")
	done := rounds.Load()
	testenv.Eventually(t, 30*time.Second, "a sampling round after the pings", func() bool { return rounds.Load() > done })
	cancel()
	wg.Wait()

	rep := p.Network()
	t.Logf("network: late %+v, drops %v, cpu %v on %d threads (%d real-time), %d intervals, links %+v",
		rep.Late, rep.Drops, rep.CPU, rep.Threads, rep.Realtime, len(rep.Intervals), rep.Links)
	if len(rep.Intervals) == 0 {
		t.Fatal("no interval rows")
	}
	last := rep.Intervals[len(rep.Intervals)-1]
	for i, r := range rep.Intervals {
		if r.Interval <= 0 || (i > 0 && r.T <= rep.Intervals[i-1].T) {
			t.Errorf("interval %d: T %v, length %v: want increasing ends and positive lengths", i, r.T, r.Interval)
		}
	}
	var sent, delivered uint64
	dirs := map[string]bool{}
	for _, l := range rep.Links {
		dirs[l.From+">"+l.To] = l.Packets > 0
		sent += l.Packets
		delivered += l.Late.Count
	}
	if !dirs["a>b"] || !dirs["b>a"] {
		t.Errorf("links carrying packets: %v, want a>b and b>a", dirs)
	}
	if sent < 60 || last.Packets != sent {
		t.Errorf("links carried %d packets, the last interval says %d cumulative; want equal and >= 60 (the echo requests)", sent, last.Packets)
	}
	if rep.Late.Count == 0 || rep.Late.Count != delivered {
		t.Errorf("lateness measured for %d packets, links delivered %d", rep.Late.Count, delivered)
	}
	if rep.Drops[fabric.DropLoss] == 0 || last.Drops[fabric.DropLoss] != rep.Drops[fabric.DropLoss] {
		t.Errorf("loss drops: report %v, last interval %v; want the configured loss counted", rep.Drops, last.Drops)
	}
	if len(rep.Unexplained) != 0 || last.Unexplained != 0 {
		t.Errorf("unexplained drops %v (last interval %d): configured loss is explained", rep.Unexplained, last.Unexplained)
	}
	if rep.CPU <= 0 || rep.Threads == 0 {
		t.Errorf("fabric CPU %v on %d threads: want the fabric's own work counted", rep.CPU, rep.Threads)
	}
}

// TestNetworkLogNodesCPU: rows taken with the nodes' CPU say how many cores the nodes used over
// the interval (counters that went back and nodes missing from one reading count nothing, the
// host's CPUs bound it); rows taken without it, or right after a round without it, say they do
// not know.
func TestNetworkLogNodesCPU(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reading := func(after time.Duration, nodes map[string]time.Duration) NodesCPU {
		return NodesCPU{At: t0.Add(after), Nodes: nodes}
	}
	var l NetworkLog
	l.TakeWithNodes(0, t0, fabric.Stats{}, reading(0, map[string]time.Duration{"a": time.Second, "b": 5 * time.Second}))
	// a used 0.5 s, b 0.25 s in 1 s; c is new.
	l.TakeWithNodes(time.Second, t0.Add(time.Second), fabric.Stats{},
		reading(time.Second, map[string]time.Duration{"a": 1500 * time.Millisecond, "b": 5250 * time.Millisecond, "c": time.Hour}))
	// b's counter went back (its cgroup made anew): only a counts, 1 s in 2 s.
	l.TakeWithNodes(3*time.Second, t0.Add(3*time.Second), fabric.Stats{},
		reading(3*time.Second, map[string]time.Duration{"a": 2500 * time.Millisecond, "b": time.Second, "c": time.Hour}))
	l.Take(4*time.Second, t0.Add(4*time.Second), fabric.Stats{})
	l.TakeWithNodes(5*time.Second, t0.Add(5*time.Second), fabric.Stats{}, reading(5*time.Second, map[string]time.Duration{"a": 3 * time.Second}))
	// Far more CPU than the host has in the interval: at most its CPUs.
	l.TakeWithNodes(6*time.Second, t0.Add(6*time.Second), fabric.Stats{}, reading(6*time.Second, map[string]time.Duration{"a": time.Hour}))
	rows := l.Report().Intervals
	type want struct {
		known bool
		cores float64
	}
	wants := []want{{true, 0.75}, {true, 0.5}, {false, 0}, {false, 0}, {true, float64(runtime.NumCPU())}}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, w := range wants {
		r := rows[i]
		if r.NodesCPUKnown != w.known || math.Abs(r.NodesCPUCores-w.cores) > 1e-9 {
			t.Errorf("row %d (T %v): nodes' CPU %.3f cores, known %v; want %.3f, %v", i, r.T, r.NodesCPUCores, r.NodesCPUKnown, w.cores, w.known)
		}
	}
}
