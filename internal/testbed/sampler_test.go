package testbed

import (
	"context"
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
