package plan

import "math"

// exactSearch enumerates every balanced partition of the instance's clients into k clusters
// once and keeps those of minimal mean KLD (up to maxTies of them, in the order found).
//
// Symmetry breaking: clusters of the same size are interchangeable before they are assigned to
// aggregators, so clients are placed in index order and a client may open an empty cluster of
// a size group only if it is that group's next unopened one. Each unordered partition is then
// reached exactly once (the seed enumerated every labelled assignment: k! times as many).
// Pruning: a cluster's KLD is counted once it is full, and KLDs are >= 0, so a branch whose
// full clusters already sum to more than the best is cut.
type exactSearch struct {
	in      *instance
	sizes   []int
	group   []int  // size group of each cluster: 0 for the larger size, 1 for the smaller
	next    [2]int // the next cluster of each size group an opening client may take
	fill    []int
	counts  [][]float64
	where   []int
	best    float64 // best sum of KLDs
	ties    [][]int // where[] of the best partitions found
	maxTies int
	leaves  int
}

func (in *instance) exact(k, maxTies int) (clusterings [][][]int, mean float64) {
	n := len(in.x)
	s := &exactSearch{in: in, sizes: balancedSizes(n, k), group: make([]int, k), fill: make([]int, k),
		counts: make([][]float64, k), where: make([]int, n), best: math.Inf(1), maxTies: maxTies}
	a := n % k
	for j := range s.sizes {
		s.counts[j] = make([]float64, in.classes)
		if j >= a {
			s.group[j] = 1
		}
	}
	s.next = [2]int{0, a}
	s.dfs(0, 0)
	for _, w := range s.ties {
		cl := make([][]int, k)
		for i, j := range w {
			cl[j] = append(cl[j], i)
		}
		clusterings = append(clusterings, cl)
	}
	return clusterings, s.best / float64(k)
}

func (s *exactSearch) dfs(i int, sum float64) {
	if i == len(s.where) {
		s.leaves++
		switch {
		case sum < s.best && !sameKLD(sum, s.best):
			s.best = sum
			s.ties = append(s.ties[:0], append([]int(nil), s.where...))
		case sameKLD(sum, s.best) && len(s.ties) < s.maxTies:
			s.ties = append(s.ties, append([]int(nil), s.where...))
		}
		return
	}
	x := s.in.x[i]
	for j := range s.sizes {
		if s.fill[j] == s.sizes[j] {
			continue
		}
		g := s.group[j]
		opening := s.fill[j] == 0
		if opening && j != s.next[g] {
			continue // an empty cluster of this size was already tried
		}
		if opening {
			s.next[g]++
		}
		s.fill[j]++
		addTo(s.counts[j], x, 1)
		s.where[i] = j
		ns := sum
		if s.fill[j] == s.sizes[j] {
			ns += s.in.kld(s.counts[j])
		}
		if ns <= s.best || sameKLD(ns, s.best) {
			s.dfs(i+1, ns)
		}
		addTo(s.counts[j], x, -1)
		s.fill[j]--
		if opening {
			s.next[g]--
		}
	}
}
