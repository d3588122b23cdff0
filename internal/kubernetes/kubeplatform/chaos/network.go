// Package chaos turns a scenario's links and link events into Chaos Mesh objects: the emulated
// network's state (links with their properties, partitions in force) as the testbed's fabric
// keeps it, the route between every pair of nodes (shortest by delay over the links that are up,
// delays and jitters added, losses combined, the narrowest bandwidth), and one NetworkChaos
// object per pair and effect between the run's node pods, kept in step with the cluster by
// server-side apply. Chaos Mesh applies them with netem and tbf on the pods' interfaces.
package chaos

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
)

// Network is the emulated network's state. Not safe for concurrent use.
type Network struct {
	nodes []string
	links []*link
	parts []platform.Fault // partitions in force, as their events named them
}

type link struct {
	a, b  string
	props platform.LinkProps
}

// NewNetwork is topo's network with its links' initial properties and no partition.
func NewNetwork(topo *platform.Topology) *Network {
	n := &Network{nodes: topo.NodeNames()}
	for _, l := range topo.Links {
		n.links = append(n.links, &link{a: l.Between[0], b: l.Between[1], props: l.LinkProps})
	}
	return n
}

func (n *Network) link(ends []string) (*link, error) {
	if len(ends) != 2 {
		return nil, fmt.Errorf("link must name two nodes, got %v", ends)
	}
	for _, l := range n.links {
		if (l.a == ends[0] && l.b == ends[1]) || (l.a == ends[1] && l.b == ends[0]) {
			return l, nil
		}
	}
	var all []string
	for _, l := range n.links {
		all = append(all, l.a+"-"+l.b)
	}
	return nil, fmt.Errorf("no link between %s and %s (links: %s)", ends[0], ends[1], strings.Join(all, ", "))
}

func (n *Network) checkNode(name string) error {
	if !slices.Contains(n.nodes, name) {
		return fmt.Errorf("no node %q (nodes: %s)", name, strings.Join(n.nodes, ", "))
	}
	return nil
}

// Apply applies a partition, heal or link fault and returns the detail events.csv records, in
// the testbed's words.
func (n *Network) Apply(f platform.Fault) (string, error) {
	switch f.Action {
	case platform.FaultPartition:
		return n.partition(f)
	case platform.FaultHeal:
		return n.heal(f)
	case platform.FaultLink:
		return n.changeLink(f)
	}
	return "", fmt.Errorf("fault %s is not a network fault (partition, heal, link)", f.Action)
}

func (n *Network) partition(f platform.Fault) (string, error) {
	switch {
	case len(f.Link) > 0:
		if _, err := n.link(f.Link); err != nil {
			return "", err
		}
		n.parts = append(n.parts, f)
		return "cut link " + f.Link[0] + "-" + f.Link[1], nil
	case f.Node != "":
		if err := n.checkNode(f.Node); err != nil {
			return "", err
		}
		n.parts = append(n.parts, f)
		return "isolated " + f.Node, nil
	case len(f.Groups) > 0:
		var parts []string
		for _, g := range f.Groups {
			for _, name := range g {
				if err := n.checkNode(name); err != nil {
					return "", err
				}
			}
			parts = append(parts, "["+strings.Join(g, ",")+"]")
		}
		n.parts = append(n.parts, f)
		return "split " + strings.Join(parts, " | "), nil
	}
	return "", fmt.Errorf("partition needs one of: node (isolate it), link [a, b] (cut it), groups [[...], [...]] (split)")
}

func (n *Network) heal(f platform.Fault) (string, error) {
	if f.Node == "" && len(f.Link) == 0 && len(f.Groups) == 0 {
		k := len(n.parts)
		n.parts = nil
		return fmt.Sprintf("healed %d partition(s)", k), nil
	}
	var kept []platform.Fault
	var active []string
	healed := 0
	for _, p := range n.parts {
		if samePartition(p, f) {
			healed++
			continue
		}
		kept = append(kept, p)
		active = append(active, describe(p))
	}
	if healed == 0 {
		return "", fmt.Errorf("no active partition matches %s (active: %s)", describe(f), strings.Join(active, "; "))
	}
	n.parts = kept
	return "healed " + describe(f), nil
}

func samePartition(a, b platform.Fault) bool {
	switch {
	case b.Node != "":
		return a.Node == b.Node
	case len(b.Link) == 2:
		return len(a.Link) == 2 && (a.Link[0] == b.Link[0] && a.Link[1] == b.Link[1] || a.Link[0] == b.Link[1] && a.Link[1] == b.Link[0])
	default:
		norm := func(gs [][]string) []string {
			var out []string
			for _, g := range gs {
				g = slices.Clone(g)
				sort.Strings(g)
				out = append(out, strings.Join(g, ","))
			}
			sort.Strings(out)
			return out
		}
		return len(a.Groups) > 0 && slices.Equal(norm(a.Groups), norm(b.Groups))
	}
}

func describe(f platform.Fault) string {
	switch {
	case f.Node != "":
		return "node " + f.Node
	case len(f.Link) == 2:
		return "link " + f.Link[0] + "-" + f.Link[1]
	case len(f.Groups) > 0:
		return fmt.Sprintf("groups %v", f.Groups)
	}
	return "(none)"
}

func (n *Network) changeLink(f platform.Fault) (string, error) {
	l, err := n.link(f.Link)
	if err != nil {
		return "", err
	}
	p := l.props
	var changed []string
	if f.Delay != nil {
		p.Delay = *f.Delay
		changed = append(changed, "delay="+p.Delay.String())
	}
	if f.Jitter != nil {
		p.Jitter = *f.Jitter
		changed = append(changed, "jitter="+p.Jitter.String())
	}
	if f.Loss != nil {
		p.Loss = *f.Loss
		changed = append(changed, fmt.Sprintf("loss=%g%%", float64(p.Loss)*100))
	}
	if f.Bandwidth != nil {
		p.Bandwidth = *f.Bandwidth
		changed = append(changed, fmt.Sprintf("bandwidth=%dbit/s", int64(p.Bandwidth)))
	}
	if len(changed) == 0 {
		return "", fmt.Errorf("link fault changes nothing: set one of delay, jitter, loss, bandwidth")
	}
	if p.Jitter.Duration > p.Delay.Duration {
		return "", fmt.Errorf("jitter %v must not exceed delay %v", p.Jitter, p.Delay)
	}
	l.props = p
	return fmt.Sprintf("link %s-%s %s", f.Link[0], f.Link[1], strings.Join(changed, " ")), nil
}

// Path is the route between two nodes now.
type Path struct {
	A, B      string
	Reachable bool
	Delay     time.Duration // one-way, summed over the route's links
	Jitter    time.Duration // summed
	Loss      float64       // 1 - prod(1 - loss), a fraction
	Bandwidth uint64        // bits/s, the narrowest link (0 = unlimited)
}

// cut says whether a partition in force cuts link l.
func (n *Network) cut(l *link) bool {
	for _, p := range n.parts {
		switch {
		case len(p.Link) == 2 && (p.Link[0] == l.a && p.Link[1] == l.b || p.Link[0] == l.b && p.Link[1] == l.a):
			return true
		case p.Node != "" && (p.Node == l.a || p.Node == l.b):
			return true
		}
	}
	return false
}

// split says whether a groups partition separates a and b (its nodes in different groups).
func (n *Network) split(a, b string) bool {
	for _, p := range n.parts {
		ga, gb := -1, -1
		for i, g := range p.Groups {
			if slices.Contains(g, a) {
				ga = i
			}
			if slices.Contains(g, b) {
				gb = i
			}
		}
		if ga >= 0 && gb >= 0 && ga != gb {
			return true
		}
	}
	return false
}

// Paths is the route between every unordered pair of nodes, in node order.
func (n *Network) Paths() []Path {
	var out []Path
	for i, a := range n.nodes {
		routes := n.routesFrom(a)
		for _, b := range n.nodes[i+1:] {
			p := routes[b]
			p.A, p.B = a, b
			if n.split(a, b) {
				p = Path{A: a, B: b}
			}
			out = append(out, p)
		}
	}
	return out
}

// routesFrom runs Dijkstra from src over the links that are up: shortest by one-way delay, a
// hop counting as a nanosecond's fraction so that a zero-delay detour never beats a direct link
// (the fabric's rule).
func (n *Network) routesFrom(src string) map[string]Path {
	dist := map[string]float64{src: 0}
	best := map[string]Path{src: {Reachable: true}}
	pq := &queue{{node: src}}
	for pq.Len() > 0 {
		it := heap.Pop(pq).(item)
		if it.d > dist[it.node] {
			continue
		}
		for _, l := range n.links {
			if n.cut(l) {
				continue
			}
			var next string
			switch it.node {
			case l.a:
				next = l.b
			case l.b:
				next = l.a
			default:
				continue
			}
			nd := it.d + float64(l.props.Delay.Duration)*1024 + 1
			if d, ok := dist[next]; ok && nd >= d {
				continue
			}
			dist[next] = nd
			cur := best[it.node]
			p := Path{Reachable: true, Delay: cur.Delay + l.props.Delay.Duration, Jitter: cur.Jitter + l.props.Jitter.Duration,
				Loss: 1 - (1-cur.Loss)*(1-float64(l.props.Loss)), Bandwidth: cur.Bandwidth}
			if bw := uint64(l.props.Bandwidth); bw > 0 && (p.Bandwidth == 0 || bw < p.Bandwidth) {
				p.Bandwidth = bw
			}
			best[next] = p
			heap.Push(pq, item{node: next, d: nd})
		}
	}
	return best
}

type item struct {
	node string
	d    float64
}

type queue []item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	return q[i].d < q[j].d || q[i].d == q[j].d && q[i].node < q[j].node
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// NeedsChaosMesh says why a scenario needs Chaos Mesh on a cluster: a link with a property set,
// two nodes with no route between them (the testbed does not connect them), or a partition, heal
// or link event. "" when it does not.
func NeedsChaosMesh(topo *platform.Topology, faults []platform.Fault) string {
	for _, l := range topo.Links {
		p := l.LinkProps
		if p.Delay.Duration > 0 || p.Jitter.Duration > 0 || p.Loss > 0 || p.Bandwidth > 0 {
			return fmt.Sprintf("link %s-%s has %s", l.Between[0], l.Between[1], describeProps(p))
		}
	}
	for _, p := range NewNetwork(topo).Paths() {
		if !p.Reachable {
			return fmt.Sprintf("nodes %s and %s have no route between them", p.A, p.B)
		}
	}
	for _, f := range faults {
		switch f.Action {
		case platform.FaultPartition, platform.FaultHeal, platform.FaultLink:
			return "a " + f.Action + " event"
		}
	}
	return ""
}

func describeProps(p platform.LinkProps) string {
	var s []string
	if p.Delay.Duration > 0 {
		s = append(s, "delay "+p.Delay.String())
	}
	if p.Jitter.Duration > 0 {
		s = append(s, "jitter "+p.Jitter.String())
	}
	if p.Loss > 0 {
		s = append(s, fmt.Sprintf("loss %g%%", float64(p.Loss)*100))
	}
	if p.Bandwidth > 0 {
		s = append(s, fmt.Sprintf("bandwidth %dbit/s", int64(p.Bandwidth)))
	}
	return strings.Join(s, ", ")
}
