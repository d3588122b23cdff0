package fabric

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Endpoint is a simple attachment: Read returns the next IPv4 packet the node sent, Write
// delivers one. Tests use in-memory Endpoints; the testbed attaches nodes through AFPacket, a
// BatchEndpoint.
type Endpoint interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	Close() error
}

// BatchEndpoint moves packets in batches, each a virtio-net header (VnetHdrLen bytes) followed by
// the IPv4 packet. ReadBatch blocks until at least one packet is there and fills sizes and stamps
// (the CLOCK_REALTIME ns at which the node sent each packet, 0 if unknown); WriteBatch returns how
// many were accepted. Offloads reports whether the endpoint accepts segmentation-offload
// super-packets; the fabric cuts them for one that does not.
type BatchEndpoint interface {
	ReadBatch(bufs [][]byte, sizes []int, stamps []int64) (int, error)
	WriteBatch(pkts [][]byte) (int, error)
	Offloads() bool
	Close() error
}

// single adapts an Endpoint: one packet per batch, no header on the wire, no offloads.
type single struct{ Endpoint }

func (s single) ReadBatch(bufs [][]byte, sizes []int, stamps []int64) (int, error) {
	n, err := s.Read(bufs[0][VnetHdrLen:])
	if err != nil {
		return 0, err
	}
	clear(bufs[0][:VnetHdrLen])
	sizes[0], stamps[0] = VnetHdrLen+n, 0
	return 1, nil
}

func (s single) WriteBatch(pkts [][]byte) (int, error) {
	for i, p := range pkts {
		if _, err := s.Write(p[VnetHdrLen:]); err != nil {
			return i, err
		}
	}
	return len(pkts), nil
}

func (single) Offloads() bool { return false }

// Props are the emulated properties of one link direction.
type Props struct {
	Delay     time.Duration
	Jitter    time.Duration // uniform in [-Jitter, +Jitter], never below zero total delay
	Loss      float64       // probability in [0, 1]
	Bandwidth int64         // bits per second, 0 = unlimited
	Queue     int           // packets that may wait for the transmitter before tail drop (0 = 1000)
}

// Node attaches an endpoint with an IPv4 address: Batch if set, else Endpoint.
type Node struct {
	Name string
	Addr netip.Addr
	// Prefixes are IPv4 networks behind the node (a Kubernetes node's pod CIDR): a packet to an
	// address in one is carried to the node as a packet to Addr is, over the same links, and
	// the node's kernel forwards it on. Prefixes of different nodes may not overlap, nor hold
	// another node's Addr.
	Prefixes []netip.Prefix
	Endpoint Endpoint
	Batch    BatchEndpoint
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
	MTU   int   // largest packet a node's interface sends (default 1500); super-packets excepted
	Seed  int64 // seeds loss and jitter; equal seeds give equal draws for equal packet sequences
}

// Drop reasons counted by the fabric. The first four follow from the emulated network's
// configuration (its loss, queues and cuts); the others mean the fabric failed its job or was
// given something it cannot carry.
const (
	DropLoss        = "loss"        // random loss of a link
	DropQueue       = "queue_full"  // bandwidth queue overflow
	DropPartition   = "partition"   // source and destination are on different sides of a split
	DropUnreachable = "unreachable" // no route (links cut)
	DropUnknownDst  = "unknown_dst" // destination address is no node
	DropNotIPv4     = "not_ipv4"    // IPv6 or garbage
	DropBadGSO      = "bad_gso"     // a super-packet that could not be cut into segments
	DropWrite       = "write"       // the node's interface refused a packet (its kernel was out of buffers)
	DropRead        = "read"        // the node sent it but the fabric's socket overflowed before reading it
)

var dropReasons = []string{DropLoss, DropQueue, DropPartition, DropUnreachable, DropUnknownDst, DropNotIPv4, DropBadGSO, DropWrite, DropRead}

// Explained reports whether drops of this reason follow from the emulated network's configuration.
func Explained(reason string) bool {
	switch reason {
	case DropLoss, DropQueue, DropPartition, DropUnreachable:
		return true
	}
	return false
}

// Counters are cumulative per-node traffic figures, as seen on the node's interface.
type Counters struct {
	TxPackets, TxBytes uint64 // sent by the node (read from its endpoint)
	RxPackets, RxBytes uint64 // delivered to the node
}

type nodeState struct {
	Node
	idx                int
	ep                 BatchEndpoint
	offloads           bool
	tx, txb, rx, rxb   atomic.Uint64
	writeDrops, badGSO atomic.Uint64
	wmu                sync.Mutex // serialises writes to ep (its scratch is not shared)
	lag                *lateness  // reader lag: read time minus the kernel's send stamp, guarded by the fabric's mu
	stamps             bool       // the endpoint stamps packets with their send time
}

// linkDir is one direction of a link. busyUntil and lastArrival are scheduled times (ns on the
// fabric clock); they only move forward, which is what makes the direction FIFO.
type linkDir struct {
	props       Props
	busyUntil   int64
	lastArrival int64
	packets     uint64 // wire packets (a super-packet counts its segments)
	bytes       uint64
	drops       [len(dropReasonsFixed)]uint64
	late        *lateness // packets whose last hop this is: delivery time beyond the scheduled one
}

// dropReasonsFixed sizes the per-link drop array (the per-link reasons).
var dropReasonsFixed = [...]string{DropLoss, DropQueue, DropPartition, DropUnreachable}

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

// event is a packet arriving at node `at` at time t, on its way to node dst; last is the link
// direction it came over (link*2+dir, -1 before the first hop).
type event struct {
	t    int64
	seq  uint64 // tie-break: equal times keep arrival order
	at   int
	src  int
	dst  int
	last int
	p    packet
}

// eventHeap is a binary min-heap of events by (t, seq), typed so that pushing and popping a
// packet's event allocates nothing (container/heap boxes every element in an interface).
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	e := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = event{} // drop the packet reference
	s = s[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return e
}

// delivery is a packet ready to be written to a node, collected under the lock and written
// outside it so a slow endpoint write never blocks scheduling.
type delivery struct {
	node *nodeState
	p    packet
}

// Fabric is the running userspace network. All scheduling state is guarded by mu; endpoint I/O
// happens outside it.
//
// Threads: the poller (poller.go), one OS thread that waits for every pollable endpoint and the
// timer at once, reads what nodes send, takes due packets and writes them to their nodes in
// batches; and a reader per endpoint that is not pollable (in-memory ones in tests). The
// fabric's CPU is what these threads use (CPU), which is what the testbed reports as its load.
type Fabric struct {
	cfg    Config
	nodes  []*nodeState
	byAddr map[netip.Addr]int
	nets   []nodeNet // the nodes' Prefixes, for destinations that are no node's address
	pools  *bufPools
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
	poll    *poller
	readers sync.WaitGroup
	threads threadSet
	// threadsUsed is how many threads New started (the poller and one reader per endpoint that
	// is not pollable): the Ps reserved for them.
	threadsUsed int
	// coalesceAll is the poller's coalescing pause: the shortest of the nodes' (see coalesce).
	coalesceAll atomic.Int64
}

// New builds the fabric and starts moving packets: the poller thread, which serves the timer and
// every pollable endpoint (AFPacket), and a reader goroutine for each other endpoint. Close stops
// everything and closes the endpoints.
func New(cfg Config) (*Fabric, error) {
	f, err := newFabric(cfg)
	if err != nil {
		return nil, err
	}
	if f.timer, err = newTimer(); err != nil {
		return nil, err
	}
	f.clock = newClock()
	if f.poll, err = newPoller(f.timer.fd); err != nil {
		unix.Close(f.timer.fd)
		return nil, err
	}
	var readers []int
	for i, n := range f.nodes {
		if p, ok := n.ep.(pollable); ok {
			if err := f.poll.add(p.pollFD(), i); err != nil {
				f.poll.closeFDs()
				unix.Close(f.timer.fd)
				return nil, err
			}
			continue
		}
		readers = append(readers, i)
	}
	f.threadsUsed = 1 + len(readers)
	reserveProcs(f.threadsUsed)
	go f.pollLoop()
	for _, i := range readers {
		f.readers.Add(1)
		go f.readLoop(i)
	}
	return f, nil
}

// newFabric builds the scheduling state (nodes, links, routes, random source) without the
// clock, the poller thread or any endpoint I/O: New adds those, and the scheduling tests drive
// ingress and advance with times of their own.
func newFabric(cfg Config) (*Fabric, error) {
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	f := &Fabric{cfg: cfg, byAddr: map[netip.Addr]int{}, parts: map[int]*partition{}, drops: map[string]uint64{},
		pools: newBufPools(cfg.MTU)}
	f.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x636f6e74696e7575))
	for i, n := range cfg.Nodes {
		if !n.Addr.Is4() {
			return nil, fmt.Errorf("fabric: node %q: address %v is not IPv4", n.Name, n.Addr)
		}
		if _, dup := f.byAddr[n.Addr]; dup {
			return nil, fmt.Errorf("fabric: node %q: duplicate address %v", n.Name, n.Addr)
		}
		f.byAddr[n.Addr] = i
		ns := &nodeState{Node: n, idx: i, ep: n.Batch, lag: newLateness()}
		if ns.ep == nil && n.Endpoint != nil {
			ns.ep = single{n.Endpoint}
		}
		if ns.ep != nil {
			ns.offloads = ns.ep.Offloads()
			_, ns.stamps = ns.ep.(*AFPacket)
		}
		f.nodes = append(f.nodes, ns)
	}
	for _, l := range cfg.Links {
		if l.A < 0 || l.B < 0 || l.A >= len(f.nodes) || l.B >= len(f.nodes) || l.A == l.B {
			return nil, fmt.Errorf("fabric: link %d-%d: bad node index", l.A, l.B)
		}
		p := normalize(l.Props)
		f.links = append(f.links, &link{a: l.A, b: l.B, dir: [2]linkDir{{props: p, late: newLateness()}, {props: p, late: newLateness()}}})
	}
	if err := f.addPrefixes(); err != nil {
		return nil, err
	}
	f.blocked = make([]bool, len(f.nodes)*len(f.nodes))
	f.recomputeRoutes()
	f.updateCoalesce()
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
	// The poller first: it uses the endpoints' sockets without holding them open.
	f.poll.close()
	// Concurrently: closing an endpoint may wait for its reader's blocked read to time out.
	errs := make([]error, len(f.nodes))
	var wg sync.WaitGroup
	for i, n := range f.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = n.ep.Close() }()
	}
	wg.Wait()
	f.readers.Wait()
	unix.Close(f.timer.fd)
	releaseProcs(f.threadsUsed)
	return errors.Join(errs...)
}

// readBufs are a reader's batch: large buffers (a super-packet may arrive), their sizes and the
// kernel's send stamps.
type readBufs struct {
	bufs   [][]byte
	held   []*[]byte
	sizes  []int
	stamps []int64
	pkts   []packet
}

func newReadBufs(f *Fabric) *readBufs {
	rb := &readBufs{bufs: make([][]byte, Batch), held: make([]*[]byte, Batch), sizes: make([]int, Batch),
		stamps: make([]int64, Batch), pkts: make([]packet, 0, Batch)}
	for j := range rb.bufs {
		rb.held[j] = f.pools.large.Get().(*[]byte)
		rb.bufs[j] = *rb.held[j]
	}
	return rb
}

func (rb *readBufs) release(f *Fabric) {
	for _, b := range rb.held {
		f.pools.large.Put(b)
	}
}

// take moves the k packets node i sent (read into rb) into the fabric, under one lock, and
// returns out with the packets to deliver at once (zero-delay paths). A packet that fits a small
// (MTU-sized) buffer is copied into one, so a packet waiting on a long link holds that, not 64 KiB.
func (f *Fabric) take(out []delivery, i int, rb *readBufs, k int) []delivery {
	n := f.nodes[i]
	now := f.clock.now()
	wall := time.Now().UnixNano()
	pkts := rb.pkts[:0]
	for j := range k {
		sz := rb.sizes[j]
		var p packet
		if sz <= f.pools.smallSize {
			bp := f.pools.small.Get().(*[]byte)
			copy(*bp, rb.bufs[j][:sz])
			p = packet{bp: bp, n: sz}
		} else {
			p = packet{bp: rb.held[j], n: sz}
			rb.held[j] = f.pools.large.Get().(*[]byte)
			rb.bufs[j] = *rb.held[j]
		}
		pkts = append(pkts, p)
		n.tx.Add(uint64(segments(p.bytes())))
		n.txb.Add(uint64(sz - VnetHdrLen))
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		for _, p := range pkts {
			f.pools.put(p.bp)
		}
		clear(pkts)
		return out
	}
	for j, p := range pkts {
		// Schedule from when the node sent the packet, when the kernel says: time the reader
		// spent not running is then not added to the link's delay (it is measured instead).
		sent := now
		if rb.stamps[j] != 0 {
			if lag := wall - rb.stamps[j]; lag > 0 && lag < int64(time.Second) {
				sent = now - lag
				n.lag.record(lag)
			}
		}
		out = f.ingress(out, i, p, sent)
	}
	f.mu.Unlock()
	clear(pkts)
	return out
}

// readLoop moves what node i sends into the fabric, for an endpoint the poller cannot serve (one
// without a file descriptor, as the tests' in-memory ones): a goroutine on its own OS thread,
// blocked in the endpoint's batch read.
func (f *Fabric) readLoop(i int) {
	defer f.readers.Done()
	runtime.LockOSThread() // the thread's CPU is the fabric's (threadSet); it ends with the loop
	f.threads.add()
	n := f.nodes[i]
	rb := newReadBufs(f)
	defer rb.release(f)
	var out []delivery
	for {
		k, err := n.ep.ReadBatch(rb.bufs, rb.sizes, rb.stamps)
		if err != nil {
			return // endpoint closed (Close) or gone with its namespace
		}
		out = f.take(out, i, rb, k)
		if len(out) > 0 {
			f.writeNow(out)
			clear(out)
			out = out[:0]
		}
	}
}

// coalesceWait is how long the poller under load waits between rounds (see pollPause).
const coalesceWait = 100_000 // ns

// updateCoalesce recomputes the poller's coalescing pause from the links' delays: coalesceWait,
// or 0 when a link is shorter than 4 waits (a packet read that late could miss its scheduled
// time) or an endpoint gives no send stamps. Called with mu held whenever links change; read
// without it, since a stale answer only changes how often the poller wakes.
func (f *Fabric) updateCoalesce() {
	all := int64(coalesceWait)
	for i, n := range f.nodes {
		w := int64(coalesceWait)
		if !n.stamps {
			w = 0
		}
		for _, l := range f.links {
			if (l.a == i || l.b == i) && int64(l.dir[0].props.Delay)-int64(l.dir[0].props.Jitter) < 4*coalesceWait {
				w = 0
			}
		}
		all = min(all, w)
	}
	f.coalesceAll.Store(all)
}

// ingress classifies a packet sent by node src at time sent and routes it; called with mu held.
func (f *Fabric) ingress(out []delivery, src int, p packet, sent int64) []delivery {
	ip := p.ip()
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return f.drop(out, p, DropNotIPv4, nil)
	}
	to := netip.AddrFrom4([4]byte(ip[16:20]))
	dst, ok := f.byAddr[to]
	if !ok {
		if dst, ok = f.netOf(to); !ok {
			return f.drop(out, p, DropUnknownDst, nil)
		}
	}
	if f.blocked[src*len(f.nodes)+dst] {
		return f.drop(out, p, DropPartition, nil)
	}
	return f.forward(out, event{t: sent, at: src, src: src, dst: dst, last: -1, p: p})
}

// nodeNet is a prefix behind node.
type nodeNet struct {
	prefix netip.Prefix
	node   int
}

// addPrefixes checks the nodes' Prefixes (IPv4, no host bits, disjoint, holding no other
// node's address) and records them for netOf.
func (f *Fabric) addPrefixes() error {
	for i, n := range f.cfg.Nodes {
		for _, p := range n.Prefixes {
			switch {
			case !p.IsValid() || !p.Addr().Is4():
				return fmt.Errorf("fabric: node %q: prefix %v is not an IPv4 network", n.Name, p)
			case p != p.Masked():
				return fmt.Errorf("fabric: node %q: prefix %v has host bits set; want %v", n.Name, p, p.Masked())
			}
			for _, o := range f.nets {
				if o.prefix.Overlaps(p) {
					return fmt.Errorf("fabric: node %q: prefix %v overlaps node %q's %v", n.Name, p, f.cfg.Nodes[o.node].Name, o.prefix)
				}
			}
			for j, m := range f.cfg.Nodes {
				if j != i && p.Contains(m.Addr) {
					return fmt.Errorf("fabric: node %q: prefix %v holds node %q's address %v", n.Name, p, m.Name, m.Addr)
				}
			}
			f.nets = append(f.nets, nodeNet{p, i})
		}
	}
	return nil
}

// netOf is the node with a prefix holding a: the prefixes are disjoint, so at most one does.
// A linear scan: a testbed has a handful of nodes, one prefix each.
func (f *Fabric) netOf(a netip.Addr) (int, bool) {
	for _, n := range f.nets {
		if n.prefix.Contains(a) {
			return n.node, true
		}
	}
	return 0, false
}

// drop counts a dropped packet (on the link direction d too, if given) and frees its buffer.
func (f *Fabric) drop(out []delivery, p packet, reason string, d *linkDir) []delivery {
	segs := uint64(segments(p.bytes()))
	f.drops[reason] += segs
	if d != nil {
		for i, r := range dropReasonsFixed {
			if r == reason {
				d.drops[i] += segs
			}
		}
	}
	f.pools.put(p.bp)
	return out
}

// needsSegments reports whether a super-packet must be cut before crossing a link with these
// properties: loss and bandwidth act per wire packet (one lost segment, not 44; a queue that
// fills segment by segment), and delay alone does not care.
func needsSegments(p *Props) bool { return p.Loss > 0 || p.Bandwidth > 0 }

// forward moves the packet of e (which is at node e.at at scheduled time e.t) one hop, or
// delivers it; zero-delay hops are taken at once. Called with mu held.
func (f *Fabric) forward(out []delivery, e event) []delivery {
	for {
		if e.at == e.dst {
			return append(out, delivery{node: f.nodes[e.dst], p: e.p})
		}
		h := f.routes[e.at][e.dst]
		if h.link < 0 {
			return f.drop(out, e.p, DropUnreachable, nil)
		}
		d := &f.links[h.link].dir[h.dir]
		p := &d.props
		if needsSegments(p) && isGSO(e.p.bytes()) {
			segs, ok := segment(e.p.bytes(), f.pools, nil)
			if !ok {
				return f.drop(out, e.p, DropBadGSO, nil)
			}
			f.pools.put(e.p.bp)
			for _, s := range segs {
				se := e
				se.p = s
				out = f.forward(out, se)
			}
			return out
		}
		if p.Loss > 0 && f.rng.Float64() < p.Loss {
			return f.drop(out, e.p, DropLoss, d)
		}
		length := e.p.n - VnetHdrLen
		t := e.t
		if p.Bandwidth > 0 {
			start := max(t, d.busyUntil)
			tx := int64(length) * 8 * int64(time.Second) / p.Bandwidth
			// The backlog limit is expressed in MTU-sized packets, as tc's queue limits are.
			maxWait := int64(p.Queue) * int64(f.cfg.MTU) * 8 * int64(time.Second) / p.Bandwidth
			if start-t > maxWait {
				return f.drop(out, e.p, DropQueue, d)
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
		d.packets += uint64(segments(e.p.bytes()))
		d.bytes += uint64(length)
		e.at = h.to
		e.last = h.link*2 + h.dir
		if t > e.t {
			e.t = t
			f.seq++
			e.seq = f.seq
			f.events.push(e)
			f.timer.arm(f.events[0].t)
			return out
		}
	}
}

// onTimer runs on the poller thread when the timer fired. Re-arming happens under mu, like every
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
	// The next wake-up comes no sooner than minGap from now: each costs two system calls, and at
	// high packet rates waking for every packet would spend the CPU the emulation needs. Packets
	// due in between wait at most minGap, which the lateness figures include.
	f.timer.notBefore = now + minGap
	return f.advance(out, now, now+f.timer.lead/2)
}

// minGap is the shortest interval between two timer wake-ups.
const minGap = 50_000 // ns

// advance takes every event due by horizon: packets move on to their next hop or are delivered
// (appended to out), and the timer is armed for the earliest event left. A delivered packet's
// lateness (now minus its scheduled time) is recorded on the link direction it came over.
// Called with mu held.
func (f *Fabric) advance(out []delivery, now, horizon int64) []delivery {
	for len(f.events) > 0 && f.events[0].t <= horizon {
		e := f.events.pop()
		if f.blocked[e.src*len(f.nodes)+e.dst] {
			out = f.drop(out, e.p, DropPartition, nil)
			continue
		}
		if e.at == e.dst && e.last >= 0 {
			f.links[e.last/2].dir[e.last%2].late.record(now - e.t)
		}
		out = f.forward(out, e)
	}
	if len(f.events) > 0 {
		f.timer.arm(f.events[0].t)
	}
	return out
}

// writeNow writes packets delivered on a reader's thread (zero-delay paths).
func (f *Fabric) writeNow(out []delivery) {
	w := batchWriter{f: f}
	w.write(out)
}

// batchWriter groups deliveries by node and writes each node's share with one batch call,
// cutting super-packets for endpoints without offloads.
type batchWriter struct {
	f       *Fabric
	byNode  [][]packet
	scratch [][]byte
}

func newBatchWriter(f *Fabric) *batchWriter { return &batchWriter{f: f} }

func (w *batchWriter) write(out []delivery) {
	if len(out) == 0 {
		return
	}
	f := w.f
	if len(w.byNode) < len(f.nodes) {
		w.byNode = make([][]packet, len(f.nodes))
	}
	for _, d := range out {
		i := d.node.idx
		if !d.node.offloads && isGSO(d.p.bytes()) {
			segs, ok := segment(d.p.bytes(), f.pools, nil)
			f.pools.put(d.p.bp)
			if !ok {
				d.node.badGSO.Add(1)
				continue
			}
			w.byNode[i] = append(w.byNode[i], segs...)
			continue
		}
		w.byNode[i] = append(w.byNode[i], d.p)
	}
	for i, pkts := range w.byNode {
		if len(pkts) == 0 {
			continue
		}
		n := f.nodes[i]
		w.scratch = w.scratch[:0]
		var segs, bytes uint64
		for _, p := range pkts {
			w.scratch = append(w.scratch, p.bytes())
		}
		n.wmu.Lock()
		sent, _ := n.ep.WriteBatch(w.scratch)
		n.wmu.Unlock()
		for j, p := range pkts {
			if j < sent {
				segs += uint64(segments(p.bytes()))
				bytes += uint64(p.n - VnetHdrLen)
			}
			f.pools.put(p.bp)
		}
		if sent < len(pkts) {
			n.writeDrops.Add(uint64(len(pkts) - sent))
		}
		n.rx.Add(segs)
		n.rxb.Add(bytes)
		clear(pkts)
		w.byNode[i] = pkts[:0]
	}
}

// NodeCounters returns the cumulative traffic of node i.
func (f *Fabric) NodeCounters(i int) Counters {
	n := f.nodes[i]
	return Counters{TxPackets: n.tx.Load(), TxBytes: n.txb.Load(), RxPackets: n.rx.Load(), RxBytes: n.rxb.Load()}
}

// Drops returns the cumulative drops by reason (every reason present, zero or not), in wire
// packets.
func (f *Fabric) Drops() map[string]uint64 {
	var writes, bad, reads uint64
	for _, n := range f.nodes {
		writes += n.writeDrops.Load()
		bad += n.badGSO.Load()
		if d, ok := n.ep.(interface{ Drops() uint64 }); ok {
			reads += d.Drops()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]uint64, len(dropReasons))
	for _, r := range dropReasons {
		m[r] = f.drops[r]
	}
	m[DropWrite] += writes
	m[DropBadGSO] += bad
	m[DropRead] += reads
	return m
}

// Pending is the number of packets in flight inside the fabric.
func (f *Fabric) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.events)
}
