package chaos

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// Network is the emulated network's state: the topology's links with their current properties and
// the partitions in force. Not safe for concurrent use (the platform holds a lock).
type Network struct {
	nodes []string       // declaration order; a node's index is its position
	index map[string]int // node name -> index
	links []link
	// parts are the partitions in force, in the order they were applied. A link is down while
	// any of them cuts it, so overlapping partitions heal independently (as in the testbed).
	parts []partition
	queue int // packets, for links whose Queue is unset
	mtu   int
}

type link struct {
	a, b  int
	props platform.LinkProps
}

// partition is one active cut, with the fault that made it (heal matches on it).
type partition struct {
	fault platform.Fault
	links []int       // links taken down (traffic reroutes around them if it can)
	side  map[int]int // node -> group, for groups: different groups may not talk
}

// NewNetwork starts from the topology's links as written (copied: later faults do not change
// topo). The topology is assumed valid (platform.LoadTopology checks it).
func NewNetwork(topo *platform.Topology) *Network {
	n := &Network{index: map[string]int{}, queue: platform.DefaultQueue, mtu: topo.MTU}
	if n.mtu == 0 {
		n.mtu = platform.DefaultMTU
	}
	for i, node := range topo.Nodes {
		n.nodes = append(n.nodes, node.Name)
		n.index[node.Name] = i
	}
	for _, l := range topo.Links {
		if len(l.Between) != 2 {
			continue
		}
		a, okA := n.index[l.Between[0]]
		b, okB := n.index[l.Between[1]]
		if !okA || !okB {
			continue
		}
		p := l.LinkProps
		if p.Queue == 0 {
			p.Queue = platform.DefaultQueue
		}
		n.links = append(n.links, link{a: a, b: b, props: p})
	}
	return n
}

// topology rebuilds the topology the faults are validated against (names and links only).
func (n *Network) topology() *platform.Topology {
	t := &platform.Topology{}
	for _, name := range n.nodes {
		t.Nodes = append(t.Nodes, platform.Node{Name: name})
	}
	for _, l := range n.links {
		t.Links = append(t.Links, platform.Link{Between: []string{n.nodes[l.a], n.nodes[l.b]}})
	}
	return t
}

// networkActions are the fault actions this package applies; the others act on processes.
var networkActions = []string{platform.FaultPartition, platform.FaultHeal, platform.FaultLink}

// Apply applies a partition, heal or link fault (other actions: an error). It returns the detail
// line events.csv records, in the testbed's words.
func (n *Network) Apply(f platform.Fault) (string, error) {
	if !slices.Contains(networkActions, f.Action) {
		return "", fmt.Errorf("fault action %q is not a network fault; network faults: %s", f.Action, strings.Join(networkActions, ", "))
	}
	if err := f.Validate(n.topology(), nil); err != nil {
		return "", fmt.Errorf("%s fault: %w", f.Action, err)
	}
	switch f.Action {
	case platform.FaultPartition:
		return n.partition(f), nil
	case platform.FaultHeal:
		return n.heal(f)
	default:
		return n.changeLink(f)
	}
}

func (n *Network) linkIndex(a, b string) int {
	ia, ib := n.index[a], n.index[b]
	for i, l := range n.links {
		if l.a == ia && l.b == ib || l.a == ib && l.b == ia {
			return i
		}
	}
	return -1 // not reached for a validated fault
}

func (n *Network) partition(f platform.Fault) string {
	p := partition{fault: f}
	var what string
	switch {
	case len(f.Link) == 2:
		p.links = []int{n.linkIndex(f.Link[0], f.Link[1])}
		what = "cut link " + f.Link[0] + "-" + f.Link[1]
	case f.Node != "":
		// Isolating a node cuts its links, as the testbed does: traffic between the others may
		// still route around it.
		node := n.index[f.Node]
		for i, l := range n.links {
			if l.a == node || l.b == node {
				p.links = append(p.links, i)
			}
		}
		what = "isolated " + f.Node
	default:
		p.side = map[int]int{}
		var parts []string
		for g, group := range f.Groups {
			for _, name := range group {
				p.side[n.index[name]] = g
			}
			parts = append(parts, "["+strings.Join(group, ",")+"]")
		}
		what = "split " + strings.Join(parts, " | ")
	}
	n.parts = append(n.parts, p)
	return what
}

// heal undoes all partitions, or those matching the fault's node, link or groups.
func (n *Network) heal(f platform.Fault) (string, error) {
	if f.Node == "" && len(f.Link) == 0 && len(f.Groups) == 0 {
		healed := len(n.parts)
		n.parts = nil
		return fmt.Sprintf("healed %d partition(s)", healed), nil
	}
	var kept []partition
	var active []string
	for _, p := range n.parts {
		if platform.SamePartition(p.fault, f) {
			continue
		}
		kept = append(kept, p)
		active = append(active, platform.DescribePartition(p.fault))
	}
	if len(kept) == len(n.parts) {
		if len(active) == 0 {
			active = []string{"none"}
		}
		return "", fmt.Errorf("heal fault: no active partition matches %s (active: %s)", platform.DescribePartition(f), strings.Join(active, "; "))
	}
	n.parts = kept
	return "healed " + platform.DescribePartition(f), nil
}

func (n *Network) changeLink(f platform.Fault) (string, error) {
	i := n.linkIndex(f.Link[0], f.Link[1])
	p := n.links[i].props
	var changed []string
	if f.Delay != nil {
		p.Delay = *f.Delay
		changed = append(changed, "delay="+p.Delay.Duration.String())
	}
	if f.Jitter != nil {
		p.Jitter = *f.Jitter
		changed = append(changed, "jitter="+p.Jitter.Duration.String())
	}
	if f.Loss != nil {
		p.Loss = *f.Loss
		changed = append(changed, fmt.Sprintf("loss=%g%%", float64(p.Loss)*100))
	}
	if f.Bandwidth != nil {
		p.Bandwidth = *f.Bandwidth
		changed = append(changed, fmt.Sprintf("bandwidth=%dbit/s", int64(p.Bandwidth)))
	}
	// Checked on the result: a fault setting only jitter is judged against the link's delay.
	if p.Jitter.Duration > p.Delay.Duration {
		return "", fmt.Errorf("link fault: jitter %v must not exceed delay %v", p.Jitter.Duration, p.Delay.Duration)
	}
	n.links[i].props = p
	return fmt.Sprintf("link %s-%s %s", f.Link[0], f.Link[1], strings.Join(changed, " ")), nil
}

// Path is one unordered node pair's route now. A and B are in declaration order.
type Path struct {
	A, B      string
	Reachable bool
	Delay     time.Duration // one-way, the sum over the route's links
	Jitter    time.Duration // summed like the delay
	Loss      float64       // fraction, 1-prod(1-loss) over the route's links
	Bandwidth uint64        // bits/s, the route's narrowest link; 0 = unlimited
	// Queue is the bottleneck link's queue in packets (that of the route's first link when no
	// link limits bandwidth); it sizes the bandwidth object's queue.
	Queue int
}

// Paths: for every unordered pair of nodes, the route's properties now (Reachable false when
// partitions or missing links cut every route): Delay and Jitter summed, Loss combined
// (1-prod(1-l)), Bandwidth the minimum (0 = unlimited). Pairs come in declaration order
// (A before B).
func (n *Network) Paths() []Path {
	down := make([]bool, len(n.links))
	for _, p := range n.parts {
		for _, li := range p.links {
			down[li] = true
		}
	}
	var out []Path
	for s := range n.nodes {
		prev := n.shortest(s, down)
		for d := s + 1; d < len(n.nodes); d++ {
			out = append(out, n.path(s, d, prev))
		}
	}
	return out
}

// shortest runs Dijkstra from src over the links that are up and returns, per node, the link
// by which the shortest route reaches it (-1: unreachable, or src). The weight is the delay in ns
// times 1024 plus one per hop, the testbed's, so that a zero-delay detour never beats a direct
// link; ties go to the lower link index (links scanned in order, strict improvement only), so
// routes are deterministic.
func (n *Network) shortest(src int, down []bool) []int {
	dist := make([]float64, len(n.nodes))
	prev := make([]int, len(n.nodes))
	done := make([]bool, len(n.nodes))
	for i := range dist {
		dist[i], prev[i] = math.Inf(1), -1
	}
	dist[src] = 0
	for {
		u := -1
		for i := range dist {
			if !done[i] && !math.IsInf(dist[i], 1) && (u < 0 || dist[i] < dist[u]) {
				u = i
			}
		}
		if u < 0 {
			return prev
		}
		done[u] = true
		for li, l := range n.links {
			if down[li] || l.a != u && l.b != u {
				continue
			}
			v := l.a
			if v == u {
				v = l.b
			}
			if nd := dist[u] + float64(l.props.Delay.Duration)*1024 + 1; nd < dist[v] {
				dist[v], prev[v] = nd, li
			}
		}
	}
}

// path walks prev back from dst to src, summing the route's properties.
func (n *Network) path(src, dst int, prev []int) Path {
	p := Path{A: n.nodes[src], B: n.nodes[dst]}
	if n.blocked(src, dst) {
		return p
	}
	keep := 1.0
	for cur := dst; cur != src; {
		li := prev[cur]
		if li < 0 {
			return Path{A: p.A, B: p.B}
		}
		l := n.links[li].props
		p.Delay += l.Delay.Duration
		p.Jitter += l.Jitter.Duration
		keep *= 1 - float64(l.Loss)
		if bw := uint64(max(l.Bandwidth, 0)); bw > 0 && (p.Bandwidth == 0 || bw < p.Bandwidth) {
			p.Bandwidth, p.Queue = bw, l.Queue
		} else if p.Bandwidth == 0 {
			p.Queue = l.Queue // the last link walked back is the route's first
		}
		if n.links[li].a == cur {
			cur = n.links[li].b
		} else {
			cur = n.links[li].a
		}
	}
	p.Reachable = true
	p.Loss = 1 - keep
	if p.Loss < 1e-12 { // rounding of 1-prod(1-0)
		p.Loss = 0
	}
	return p
}

// blocked reports whether a groups partition forbids a and b to talk whatever the route.
func (n *Network) blocked(a, b int) bool {
	for _, p := range n.parts {
		ga, okA := p.side[a]
		gb, okB := p.side[b]
		if okA && okB && ga != gb {
			return true
		}
	}
	return false
}
