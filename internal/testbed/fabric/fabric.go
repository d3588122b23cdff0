package fabric

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint is one node's attachment to the fabric: Read returns the next IPv4 packet the node
// sent, Write delivers a packet to it. A TUN device is the production Endpoint; tests use pipes.
type Endpoint interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	Close() error
}

// Props are the emulated properties of one link direction.
type Props struct {
	Delay     time.Duration
	Jitter    time.Duration // uniform in [-Jitter, +Jitter], never below zero total delay
	Loss      float64       // probability in [0, 1]
	Bandwidth int64         // bits per second, 0 = unlimited
	Queue     int           // packets that may wait for the transmitter before tail drop (0 = 1000)
}

// Node attaches an endpoint with an IPv4 address.
type Node struct {
	Name     string
	Addr     netip.Addr
	Endpoint Endpoint
}

// Link connects two nodes (by index into Config.Nodes); Props apply to both directions.
type Link struct {
	A, B  int
	Props Props
}

// Config builds a Fabric.
type Config struct {
	Nodes []Node
	Links []Link
	MTU   int   // largest packet accepted (default 1500)
	Seed  int64 // seeds loss and jitter; equal seeds give equal draws for equal packet sequences
}

// Drop reasons counted by the fabric.
const (
	DropLoss        = "loss"        // random loss of a link
	DropQueue       = "queue_full"  // bandwidth queue overflow
	DropPartition   = "partition"   // source and destination are on different sides of a split
	DropUnreachable = "unreachable" // no route (links cut)
	DropUnknownDst  = "unknown_dst" // destination address is no node
	DropNotIPv4     = "not_ipv4"    // IPv6 or garbage
)

var dropReasons = []string{DropLoss, DropQueue, DropPartition, DropUnreachable, DropUnknownDst, DropNotIPv4}

// Counters are cumulative per-node traffic figures, as seen on the node's interface.
type Counters struct {
	TxPackets, TxBytes uint64 // sent by the node (read from its endpoint)
	RxPackets, RxBytes uint64 // delivered to the node
}

type nodeState struct {
	Node
	tx, txb, rx, rxb atomic.Uint64
	// outq feeds the node's writer goroutine. Writing to a TUN device runs the receiving
	// namespace's network stack in the writer's context (tens of µs per packet), so one writer per
	// node spreads that work over the CPUs instead of serialising it on the timer thread.
	outq chan delivery
	// queued counts packets handed to the writer and not yet written; only while it is zero may
	// the timer thread write to this node itself without overtaking them.
	queued atomic.Int64
}

// linkDir is one direction of a link. busyUntil and lastArrival are scheduled times (ns on the
// fabric clock); they only move forward, which is what makes the direction FIFO.
type linkDir struct {
	props       Props
	busyUntil   int64
	lastArrival int64
	packets     uint64
	bytes       uint64
}

type link struct {
	a, b int
	dir  [2]linkDir // dir[0]: a->b, dir[1]: b->a
	cuts int        // number of active partitions cutting this link; >0 = down
}

// hop is the first step from a node toward a destination.
type hop struct {
	link int // -1 = no route
	dir  int
	to   int
}

// event is a packet arriving at node `at` at time t, on its way to node dst.
type event struct {
	t      int64
	seq    uint64 // tie-break: equal times keep arrival order
	at     int
	src    int
	dst    int
	pkt    *[]byte
	length int
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// delivery is a packet ready to be written to a node, collected under the lock and written
// outside it so a slow endpoint write never blocks scheduling.
type delivery struct {
	node   *nodeState
	pkt    *[]byte
	length int
}

// Fabric is the running userspace network. All scheduling state is guarded by mu; endpoint I/O
// happens outside it.
type Fabric struct {
	cfg    Config
	nodes  []*nodeState
	byAddr map[netip.Addr]int
	pool   sync.Pool
	clock  *clock

	mu      sync.Mutex
	links   []*link
	routes  [][]hop // routes[src][dst]
	blocked []bool  // blocked[src*n+dst]: a split partition forbids this pair
	parts   map[int]*partition
	nextID  int
	events  eventHeap
	seq     uint64
	rng     *rand.Rand
	drops   map[string]uint64
	closed  bool
	timer   *timer
	readers sync.WaitGroup
	writers sync.WaitGroup
}

// New builds the fabric and starts moving packets: one reader goroutine per endpoint and the
// timer thread. Close stops everything and closes the endpoints.
func New(cfg Config) (*Fabric, error) {
	f, err := newFabric(cfg)
	if err != nil {
		return nil, err
	}
	if f.timer, err = newTimer(); err != nil {
		return nil, err
	}
	f.clock = newClock()
	var out []delivery
	go f.timer.run(func(expired bool) {
		out = f.onTimer(out[:0], expired)
		if len(out) <= inlineWrites {
			f.writeNow(out)
		} else {
			f.deliver(out)
		}
		clear(out) // drop packet references held by the reused slice
	})
	for i, n := range f.nodes {
		f.readers.Add(1)
		go f.readLoop(i)
		f.writers.Add(1)
		go f.writeLoop(n)
	}
	return f, nil
}

// newFabric builds the scheduling state (nodes, links, routes, random source) without the
// clock, the timer thread or any endpoint I/O: New adds those, and the scheduling tests drive
// ingress and advance with times of their own.
func newFabric(cfg Config) (*Fabric, error) {
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	f := &Fabric{cfg: cfg, byAddr: map[netip.Addr]int{}, parts: map[int]*partition{}, drops: map[string]uint64{}}
	f.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x636f6e74696e7575))
	bufSize := cfg.MTU + 64
	f.pool.New = func() any { b := make([]byte, bufSize); return &b }
	for i, n := range cfg.Nodes {
		if !n.Addr.Is4() {
			return nil, fmt.Errorf("fabric: node %q: address %v is not IPv4", n.Name, n.Addr)
		}
		if _, dup := f.byAddr[n.Addr]; dup {
			return nil, fmt.Errorf("fabric: node %q: duplicate address %v", n.Name, n.Addr)
		}
		f.byAddr[n.Addr] = i
		f.nodes = append(f.nodes, &nodeState{Node: n, outq: make(chan delivery, 4096)})
	}
	for _, l := range cfg.Links {
		if l.A < 0 || l.B < 0 || l.A >= len(f.nodes) || l.B >= len(f.nodes) || l.A == l.B {
			return nil, fmt.Errorf("fabric: link %d-%d: bad node index", l.A, l.B)
		}
		p := normalize(l.Props)
		f.links = append(f.links, &link{a: l.A, b: l.B, dir: [2]linkDir{{props: p}, {props: p}}})
	}
	f.blocked = make([]bool, len(f.nodes)*len(f.nodes))
	f.recomputeRoutes()
	return f, nil
}

func normalize(p Props) Props {
	if p.Queue <= 0 {
		p.Queue = 1000
	}
	return p
}

// Close stops the fabric: pending packets are discarded and endpoints closed.
func (f *Fabric) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	var errs []error
	for _, n := range f.nodes {
		errs = append(errs, n.Endpoint.Close())
	}
	f.readers.Wait()
	f.timer.close()
	for _, n := range f.nodes {
		close(n.outq)
	}
	f.writers.Wait()
	return errors.Join(errs...)
}

func (f *Fabric) readLoop(i int) {
	defer f.readers.Done()
	n := f.nodes[i]
	var out []delivery
	for {
		bp := f.pool.Get().(*[]byte)
		k, err := n.Endpoint.Read(*bp)
		if err != nil {
			f.pool.Put(bp)
			return // endpoint closed (Close) or gone with its namespace
		}
		n.tx.Add(1)
		n.txb.Add(uint64(k))
		now := f.clock.now()
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			f.pool.Put(bp)
			return
		}
		out = f.ingress(out[:0], i, bp, k, now)
		f.mu.Unlock()
		f.deliver(out)
		clear(out)
	}
}

// ingress classifies a packet sent by node src and routes it; called with mu held.
func (f *Fabric) ingress(out []delivery, src int, bp *[]byte, length int, now int64) []delivery {
	pkt := (*bp)[:length]
	if length < 20 || pkt[0]>>4 != 4 {
		return f.drop(out, bp, DropNotIPv4)
	}
	dst, ok := f.byAddr[netip.AddrFrom4([4]byte(pkt[16:20]))]
	if !ok {
		return f.drop(out, bp, DropUnknownDst)
	}
	if f.blocked[src*len(f.nodes)+dst] {
		return f.drop(out, bp, DropPartition)
	}
	return f.forward(out, event{t: now, at: src, src: src, dst: dst, pkt: bp, length: length})
}

func (f *Fabric) drop(out []delivery, bp *[]byte, reason string) []delivery {
	f.drops[reason]++
	f.pool.Put(bp)
	return out
}

// forward moves the packet of e (which is at node e.at at scheduled time e.t) one hop, or
// delivers it; zero-delay hops are taken at once. Called with mu held.
func (f *Fabric) forward(out []delivery, e event) []delivery {
	for {
		if e.at == e.dst {
			return append(out, delivery{node: f.nodes[e.dst], pkt: e.pkt, length: e.length})
		}
		h := f.routes[e.at][e.dst]
		if h.link < 0 {
			return f.drop(out, e.pkt, DropUnreachable)
		}
		d := &f.links[h.link].dir[h.dir]
		p := &d.props
		if p.Loss > 0 && f.rng.Float64() < p.Loss {
			return f.drop(out, e.pkt, DropLoss)
		}
		t := e.t
		if p.Bandwidth > 0 {
			start := max(t, d.busyUntil)
			tx := int64(e.length) * 8 * int64(time.Second) / p.Bandwidth
			// The backlog limit is expressed in MTU-sized packets, as tc's queue limits are.
			maxWait := int64(p.Queue) * int64(f.cfg.MTU) * 8 * int64(time.Second) / p.Bandwidth
			if start-t > maxWait {
				return f.drop(out, e.pkt, DropQueue)
			}
			d.busyUntil = start + tx
			t = d.busyUntil
		}
		delay := int64(p.Delay)
		if p.Jitter > 0 {
			delay += f.rng.Int64N(2*int64(p.Jitter)+1) - int64(p.Jitter)
			delay = max(delay, 0)
		}
		t += delay
		t = max(t, d.lastArrival)
		d.lastArrival = t
		d.packets++
		d.bytes += uint64(e.length)
		e.at = h.to
		if t > e.t {
			e.t = t
			f.seq++
			e.seq = f.seq
			heap.Push(&f.events, e)
			f.timer.arm(f.events[0].t)
			return out
		}
	}
}

// onTimer runs on the timer thread when the timer fired. Re-arming happens under mu, like every
// arm() from forward, so an event pushed concurrently can never be left without a wake-up.
//
// An expired timerfd is disarmed even if the fabric's clock reads a little before the
// programmed time (the two clocks are paired at start, not identical): were it kept as armed,
// arm() would see an earlier-or-equal wake-up pending and never program the timer again, and
// every packet in flight would wait forever.
func (f *Fabric) onTimer(out []delivery, expired bool) []delivery {
	now := f.clock.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer.programmed != 0 && (expired || now >= f.timer.programmed) {
		f.timer.fired(now)
	}
	if f.closed {
		return out
	}
	return f.advance(out, now+f.timer.lead/2)
}

// advance takes every event due by horizon: packets move on to their next hop or are delivered
// (appended to out), and the timer is armed for the earliest event left. Called with mu held.
func (f *Fabric) advance(out []delivery, horizon int64) []delivery {
	for len(f.events) > 0 && f.events[0].t <= horizon {
		e := heap.Pop(&f.events).(event)
		if f.blocked[e.src*len(f.nodes)+e.dst] {
			out = f.drop(out, e.pkt, DropPartition)
			continue
		}
		out = f.forward(out, e)
	}
	if len(f.events) > 0 {
		f.timer.arm(f.events[0].t)
	}
	return out
}

// deliver hands packets to their nodes' writers (blocking when a writer is 4096 packets behind,
// which slows the fabric down instead of dropping silently).
func (f *Fabric) deliver(out []delivery) {
	for _, d := range out {
		d.node.queued.Add(1)
		d.node.outq <- d
	}
}

// inlineWrites is how many due packets the timer thread writes itself instead of handing them to
// the node writers: at low rates the hand-off (waking a goroutine) costs more latency than the
// write, at high rates parallel writers keep the timer thread free.
const inlineWrites = 2

// writeNow writes packets on the calling thread. It must not be used while a node's writer may
// hold earlier packets for the same node, or order would break: the writer queue is checked.
func (f *Fabric) writeNow(out []delivery) {
	for _, d := range out {
		if d.node.queued.Load() > 0 {
			d.node.queued.Add(1)
			d.node.outq <- d // keep FIFO behind what the writer still has
			continue
		}
		f.write(d)
	}
}

func (f *Fabric) write(d delivery) {
	if _, err := d.node.Endpoint.Write((*d.pkt)[:d.length]); err == nil {
		d.node.rx.Add(1)
		d.node.rxb.Add(uint64(d.length))
	}
	f.pool.Put(d.pkt)
}

func (f *Fabric) writeLoop(n *nodeState) {
	defer f.writers.Done()
	for d := range n.outq {
		f.write(d)
		n.queued.Add(-1)
	}
}

// NodeCounters returns the cumulative traffic of node i.
func (f *Fabric) NodeCounters(i int) Counters {
	n := f.nodes[i]
	return Counters{TxPackets: n.tx.Load(), TxBytes: n.txb.Load(), RxPackets: n.rx.Load(), RxBytes: n.rxb.Load()}
}

// Drops returns the cumulative drops by reason (every reason present, zero or not).
func (f *Fabric) Drops() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]uint64, len(dropReasons))
	for _, r := range dropReasons {
		m[r] = f.drops[r]
	}
	return m
}

// Pending is the number of packets in flight inside the fabric.
func (f *Fabric) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.events)
}
