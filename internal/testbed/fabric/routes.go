package fabric

import (
	"container/heap"
	"math"
)

// recomputeRoutes rebuilds routes[src][dst] over the links that are up: shortest by configured
// one-way delay, ties broken by fewer hops and then by lower link index, so routes are
// deterministic. Called with mu held whenever a link's delay or cut state changes.
func (f *Fabric) recomputeRoutes() {
	n := len(f.nodes)
	adj := make([][]int, n) // node -> link indices
	for i, l := range f.links {
		if l.cuts > 0 {
			continue
		}
		adj[l.a] = append(adj[l.a], i)
		adj[l.b] = append(adj[l.b], i)
	}
	routes := make([][]hop, n)
	for s := range routes {
		routes[s] = make([]hop, n)
		for d := range routes[s] {
			routes[s][d] = hop{link: -1}
		}
	}
	// One Dijkstra per destination over the (symmetric-weight) graph: the tree's parent pointer of
	// node u is u's next hop toward dst. Weight = delay in ns scaled by 1024 plus one per hop, so a
	// zero-delay detour never beats a direct link.
	dist := make([]float64, n)
	for dst := 0; dst < n; dst++ {
		for i := range dist {
			dist[i] = math.Inf(1)
		}
		dist[dst] = 0
		pq := &distHeap{{node: dst}}
		for pq.Len() > 0 {
			it := heap.Pop(pq).(distItem)
			if it.d > dist[it.node] {
				continue
			}
			for _, li := range adj[it.node] {
				l := f.links[li]
				u, dirToward := l.a, 0 // u sends over dir 0 (a->b) when it.node == b
				if l.a == it.node {
					u, dirToward = l.b, 1
				}
				nd := it.d + float64(l.dir[dirToward].props.Delay)*1024 + 1
				if nd < dist[u] {
					dist[u] = nd
					routes[u][dst] = hop{link: li, dir: dirToward, to: it.node}
					heap.Push(pq, distItem{node: u, d: nd})
				}
			}
		}
	}
	f.routes = routes
}

type distItem struct {
	node int
	d    float64
}

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// Path returns the node indices a packet from src to dst traverses (src and dst included), nil
// when dst is unreachable, and the sum of the configured one-way delays along it.
func (f *Fabric) Path(src, dst int) ([]int, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := []int{src}
	var delay int64
	for cur := src; cur != dst; {
		h := f.routes[cur][dst]
		if h.link < 0 || len(path) > len(f.nodes) {
			return nil, 0
		}
		delay += int64(f.links[h.link].dir[h.dir].props.Delay)
		cur = h.to
		path = append(path, cur)
	}
	return path, delay
}
