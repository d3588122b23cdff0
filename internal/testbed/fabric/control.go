package fabric

import (
	"fmt"
	"sort"
)

// partition is one active cut: links taken down and/or node pairs that may not talk.
type partition struct {
	links []int
	pairs [][2]int
}

// LinkCount is the number of links.
func (f *Fabric) LinkCount() int { return len(f.links) }

// LinkProps returns the current properties of link i (both directions are kept equal).
func (f *Fabric) LinkProps(i int) Props {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.links[i].dir[0].props
}

// SetLinkProps changes link i in both directions. Packets already on the wire keep the timing
// they were given; routes are recomputed because the shortest path may change with the delay.
func (f *Fabric) SetLinkProps(i int, p Props) error {
	if i < 0 || i >= len(f.links) {
		return fmt.Errorf("fabric: no link %d", i)
	}
	p = normalize(p)
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := range f.links[i].dir {
		f.links[i].dir[d].props = p
	}
	f.recomputeRoutes()
	f.updateCoalesce()
	return nil
}

// LinkUp reports whether link i is not cut by any partition.
func (f *Fabric) LinkUp(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.links[i].cuts == 0
}

// LinksOf returns the indices of the links attached to node.
func (f *Fabric) LinksOf(node int) []int {
	var out []int
	for i, l := range f.links {
		if l.a == node || l.b == node {
			out = append(out, i)
		}
	}
	return out
}

// Partition activates a cut and returns its id for Heal. links are taken down (traffic reroutes
// around them if it can); groups forbid any traffic between nodes of different groups whatever
// the route (nodes in no group are unaffected).
func (f *Fabric) Partition(links []int, groups [][]int) (int, error) {
	p := &partition{}
	for _, li := range links {
		if li < 0 || li >= len(f.links) {
			return 0, fmt.Errorf("fabric: no link %d", li)
		}
		p.links = append(p.links, li)
	}
	side := map[int]int{}
	for g, nodes := range groups {
		for _, n := range nodes {
			if n < 0 || n >= len(f.nodes) {
				return 0, fmt.Errorf("fabric: no node %d", n)
			}
			if prev, dup := side[n]; dup && prev != g {
				return 0, fmt.Errorf("fabric: node %s is in two groups", f.nodes[n].Name)
			}
			side[n] = g
		}
	}
	for a, ga := range side {
		for b, gb := range side {
			if ga != gb {
				p.pairs = append(p.pairs, [2]int{a, b})
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.parts[f.nextID] = p
	f.applyPartitions()
	return f.nextID, nil
}

// Heal removes partition id (all partitions when id is 0).
func (f *Fabric) Heal(id int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id == 0 {
		clear(f.parts)
	} else if _, ok := f.parts[id]; !ok {
		return fmt.Errorf("fabric: no active partition %d", id)
	} else {
		delete(f.parts, id)
	}
	f.applyPartitions()
	return nil
}

// Partitions lists the active partition ids in creation order.
func (f *Fabric) Partitions() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]int, 0, len(f.parts))
	for id := range f.parts {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// applyPartitions derives link cut counts and blocked pairs from the active partitions, so that
// overlapping partitions heal independently. Called with mu held.
func (f *Fabric) applyPartitions() {
	for _, l := range f.links {
		l.cuts = 0
	}
	clear(f.blocked)
	n := len(f.nodes)
	for _, p := range f.parts {
		for _, li := range p.links {
			f.links[li].cuts++
		}
		for _, pr := range p.pairs {
			f.blocked[pr[0]*n+pr[1]] = true
		}
	}
	f.recomputeRoutes()
}
