package fabric

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// These tests drive the fabric's scheduling with injected times: packets enter through ingress at
// a given "now" and time moves only when the test advances it, event by event. They check the
// scheduled arrival times exactly, which the wall clock of a shared machine cannot; how closely
// the timer thread meets those times is measured by `continuum bench testbed`.

type schedNet struct {
	t   *testing.T
	f   *Fabric
	ips []netip.Addr
	now int64
	// arrivals are the deliveries so far, in delivery order.
	arrivals []schedArrival
}

type schedArrival struct {
	node string
	id   byte
	at   int64
}

func newSchedNet(t *testing.T, n int, links []Link) *schedNet {
	t.Helper()
	return newSchedNetWith(t, n, links, nil)
}

// newSchedNetWith is newSchedNet whose node i has the prefixes prefixes[i].
func newSchedNetWith(t *testing.T, n int, links []Link, prefixes map[int][]netip.Prefix) *schedNet {
	t.Helper()
	sn := &schedNet{t: t, now: int64(time.Second)}
	var nodes []Node
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})
		sn.ips = append(sn.ips, ip)
		nodes = append(nodes, Node{Name: string(rune('a' + i)), Addr: ip, Prefixes: prefixes[i]})
	}
	f, err := newFabric(Config{Nodes: nodes, Links: links, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	f.timer = &timer{fd: -1} // records what it is armed for; lead 0: events are taken on time
	sn.f = f
	return sn
}

func (sn *schedNet) record(out []delivery) {
	for _, d := range out {
		sn.arrivals = append(sn.arrivals, schedArrival{node: d.node.Name, id: d.p.ip()[4], at: sn.now})
	}
}

// send has node from send a packet to node to at the current time.
func (sn *schedNet) send(from, to, size int, id byte) {
	sn.sendTo(from, sn.ips[to], size, id)
}

// sendTo has node from send a packet to address dst at the current time.
func (sn *schedNet) sendTo(from int, dst netip.Addr, size int, id byte) {
	bp := sn.f.pools.small.Get().(*[]byte)
	clear((*bp)[:VnetHdrLen])
	n := VnetHdrLen + copy((*bp)[VnetHdrLen:], ipPacket(dst, size, id))
	sn.f.mu.Lock()
	out := sn.f.ingress(nil, from, packet{bp: bp, n: n}, sn.now)
	sn.f.mu.Unlock()
	sn.record(out)
}

// advanceTo moves time to until, taking every event due on the way at its own time, and checks
// that the timer is always armed for the earliest pending event.
func (sn *schedNet) advanceTo(until int64) {
	sn.t.Helper()
	for {
		sn.f.mu.Lock()
		if len(sn.f.events) == 0 || sn.f.events[0].t > until {
			sn.f.mu.Unlock()
			break
		}
		next := sn.f.events[0].t
		if sn.f.timer.armed != next {
			sn.f.mu.Unlock()
			sn.t.Fatalf("timer armed for %d, the earliest event is at %d", sn.f.timer.armed, next)
		}
		sn.f.timer.fired(next)
		sn.now = next
		out := sn.f.advance(nil, next, next)
		sn.f.mu.Unlock()
		sn.record(out)
	}
	sn.now = max(sn.now, until)
}

func (sn *schedNet) pending() int {
	sn.f.mu.Lock()
	defer sn.f.mu.Unlock()
	return len(sn.f.events)
}

func TestScheduledDelayIsPerHopAndSummed(t *testing.T) {
	sn := newSchedNet(t, 3, []Link{
		{A: 0, B: 1, Props: Props{Delay: 10 * time.Millisecond}},
		{A: 1, B: 2, Props: Props{Delay: 20 * time.Millisecond}},
	})
	t0 := sn.now
	sn.send(0, 2, 100, 1)
	if sn.f.timer.armed != t0+int64(10*time.Millisecond) {
		t.Fatalf("first hop due at +%v, want +10ms", time.Duration(sn.f.timer.armed-t0))
	}
	sn.advanceTo(t0 + int64(30*time.Millisecond) - 1)
	if len(sn.arrivals) != 0 || sn.pending() != 1 {
		t.Fatalf("delivered %v before the summed delay of 30ms", sn.arrivals)
	}
	if sn.f.timer.armed != t0+int64(30*time.Millisecond) {
		t.Fatalf("second hop due at +%v, want +30ms", time.Duration(sn.f.timer.armed-t0))
	}
	sn.advanceTo(t0 + int64(30*time.Millisecond))
	if len(sn.arrivals) != 1 || sn.arrivals[0].node != "c" || sn.arrivals[0].at != t0+int64(30*time.Millisecond) {
		t.Fatalf("arrivals %+v, want one at c after exactly 30ms", sn.arrivals)
	}
	// Hops without delay are taken at once, inside ingress.
	zero := newSchedNet(t, 3, []Link{{A: 0, B: 1}, {A: 1, B: 2}})
	zero.send(0, 2, 100, 2)
	if len(zero.arrivals) != 1 || zero.arrivals[0].at != zero.now || zero.pending() != 0 {
		t.Fatalf("zero-delay path: arrivals %+v, %d pending", zero.arrivals, zero.pending())
	}
}

// TestPrefixRoutesLikeItsNode: a packet to an address in a node's prefix (a pod behind a
// Kubernetes node) takes the node's path with its summed delay and is cut by the node's
// partitions; an address in no prefix is still unknown_dst.
func TestPrefixRoutesLikeItsNode(t *testing.T) {
	pods := netip.MustParsePrefix("10.244.2.0/24")
	sn := newSchedNetWith(t, 3, []Link{
		{A: 0, B: 1, Props: Props{Delay: 10 * time.Millisecond}},
		{A: 1, B: 2, Props: Props{Delay: 20 * time.Millisecond}},
	}, map[int][]netip.Prefix{2: {pods}})
	t0 := sn.now
	sn.sendTo(0, netip.MustParseAddr("10.244.2.7"), 100, 1)
	sn.advanceTo(t0 + int64(30*time.Millisecond) - 1)
	if len(sn.arrivals) != 0 {
		t.Fatalf("delivered %v before the path's 30ms", sn.arrivals)
	}
	sn.advanceTo(t0 + int64(30*time.Millisecond))
	if len(sn.arrivals) != 1 || sn.arrivals[0].node != "c" {
		t.Fatalf("arrivals %+v, want one at c (whose prefix holds 10.244.2.7) after 30ms", sn.arrivals)
	}
	sn.sendTo(0, netip.MustParseAddr("10.244.3.1"), 100, 2)
	if d := sn.f.Drops()[DropUnknownDst]; d != 1 {
		t.Fatalf("a packet to an address in no prefix: drops %v, want one unknown_dst", sn.f.Drops())
	}
	if _, err := sn.f.Partition(nil, [][]int{{0}, {2}}); err != nil {
		t.Fatal(err)
	}
	sn.sendTo(0, netip.MustParseAddr("10.244.2.8"), 100, 3)
	sn.advanceTo(sn.now + int64(time.Second))
	if len(sn.arrivals) != 1 || sn.f.Drops()[DropPartition] != 1 {
		t.Fatalf("across a partition of a and c: arrivals %+v, drops %v; want the packet dropped as partition", sn.arrivals, sn.f.Drops())
	}
}

// TestPrefixesChecked: prefixes that would make a destination ambiguous, or are no IPv4
// network, are refused with the node and prefix named.
func TestPrefixesChecked(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for _, tc := range []struct {
		name   string
		pa, pb []netip.Prefix
		want   string
	}{
		{"overlap", []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24")},
			`node "b": prefix 10.244.1.0/24 overlaps node "a"'s 10.244.0.0/16`},
		{"host bits", []netip.Prefix{netip.MustParsePrefix("10.244.1.5/24")}, nil,
			`node "a": prefix 10.244.1.5/24 has host bits set; want 10.244.1.0/24`},
		{"holds another node", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, nil,
			`node "a": prefix 10.0.0.0/24 holds node "b"'s address 10.0.0.2`},
		{"IPv6", nil, []netip.Prefix{netip.MustParsePrefix("fd00::/64")}, `node "b": prefix fd00::/64 is not an IPv4 network`},
		{"invalid", nil, []netip.Prefix{{}}, `node "b": prefix invalid Prefix is not an IPv4 network`},
	} {
		_, err := newFabric(Config{Nodes: []Node{{Name: "a", Addr: a, Prefixes: tc.pa}, {Name: "b", Addr: b, Prefixes: tc.pb}}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	own := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/31")} // holds a's own address: allowed
	if _, err := newFabric(Config{Nodes: []Node{{Name: "a", Addr: a, Prefixes: own}, {Name: "c", Addr: netip.MustParseAddr("10.0.1.1")}}}); err != nil {
		t.Errorf("a prefix holding its own node's address: %v", err)
	}
}

// checkFIFO checks that node b got packets 0..n-1 in order, none earlier than lo after its send
// and none later than hi after it unless it waited for the packet before it (a link is FIFO, so
// a packet drawn a short delay leaves right after the one ahead of it).
func checkFIFO(t *testing.T, sn *schedNet, n int, sent []int64, lo, hi time.Duration) (minD, maxD time.Duration) {
	t.Helper()
	if len(sn.arrivals) != n {
		t.Fatalf("%d of %d packets delivered (%d pending)", len(sn.arrivals), n, sn.pending())
	}
	minD, maxD = time.Hour, 0
	for i, a := range sn.arrivals {
		if a.id != byte(i) {
			t.Fatalf("packet %d delivered in position %d: the link reordered", a.id, i)
		}
		d := time.Duration(a.at - sent[i])
		held := i > 0 && a.at == sn.arrivals[i-1].at
		if d < lo || (d > hi && !held) {
			t.Fatalf("packet %d: delay %v outside [%v, %v] and not held behind packet %d", i, d, lo, hi, i-1)
		}
		if !held {
			minD, maxD = min(minD, d), max(maxD, d)
		}
	}
	return minD, maxD
}

func TestScheduledJitterKeepsOrderAndBounds(t *testing.T) {
	for _, tc := range []struct {
		name          string
		delay, jitter time.Duration
		gap           time.Duration // between sends
		spread        bool          // sends far enough apart that no packet waits for another
	}{
		// 200 µs apart, most packets drawn a short delay wait for the one ahead of them.
		{"5ms ± 2ms", 5 * time.Millisecond, 2 * time.Millisecond, 200 * time.Microsecond, false},
		{"5ms ± 2ms, sparse", 5 * time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, true},
		// With no base delay, a draw below zero is zero: the packet crosses at once unless an
		// earlier one is still on the link.
		{"0 ± 1ms", 0, time.Millisecond, 100 * time.Microsecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sn := newSchedNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Delay: tc.delay, Jitter: tc.jitter}}})
			const n = 250
			sent := make([]int64, n)
			for i := range n {
				sn.advanceTo(sn.now + int64(tc.gap))
				sent[i] = sn.now
				sn.send(0, 1, 40, byte(i))
			}
			sn.advanceTo(sn.now + int64(time.Second))
			lo := max(tc.delay-tc.jitter, 0)
			minD, maxD := checkFIFO(t, sn, n, sent, lo, tc.delay+tc.jitter)
			// Where no packet waits, the delays are the draws: their extremes come within a tenth
			// of the jitter of its bounds (250 uniform draws miss that with probability ~1e-11).
			if tc.spread && (minD > lo+tc.jitter/10 || maxD < tc.delay+tc.jitter-tc.jitter/10) {
				t.Errorf("delays span only %v..%v of [%v, %v]", minD, maxD, lo, tc.delay+tc.jitter)
			}
		})
	}
}

func TestScheduledBandwidthSerialisesAndQueueLimits(t *testing.T) {
	// 1 Mbit/s: a 1250-byte packet takes 10 ms. The queue holds 5 MTU-sized packets of backlog
	// (5 x 1500 B = 60 ms): of 20 packets sent at once, those that would wait at most 60 ms pass
	// (the first 7, waiting 0..60 ms) and arrive 10 ms apart; the other 13 are dropped.
	sn := newSchedNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Bandwidth: 1_000_000, Queue: 5}}})
	t0 := sn.now
	for i := range 20 {
		sn.send(0, 1, 1250, byte(i))
	}
	sn.advanceTo(t0 + int64(time.Second))
	if len(sn.arrivals) != 7 || sn.f.Drops()[DropQueue] != 13 {
		t.Fatalf("%d delivered, drops %v; want 7 and 13 queue drops", len(sn.arrivals), sn.f.Drops())
	}
	for k, a := range sn.arrivals {
		if want := t0 + int64(k+1)*int64(10*time.Millisecond); a.id != byte(k) || a.at != want {
			t.Errorf("packet %d arrived at +%v, want packet %d at +%v", a.id, time.Duration(a.at-t0), k, time.Duration(want-t0))
		}
	}
}

// The event heap pops in (time, sequence) order whatever the push order.
func TestEventHeapOrder(t *testing.T) {
	var h eventHeap
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		h.push(event{t: r.Int64N(50), seq: uint64(i)})
	}
	prev := h.pop()
	for len(h) > 0 {
		e := h.pop()
		if e.t < prev.t || (e.t == prev.t && e.seq < prev.seq) {
			t.Fatalf("popped (%d,%d) after (%d,%d)", e.t, e.seq, prev.t, prev.seq)
		}
		prev = e
	}
}
