package plan

import (
	"math/rand/v2"
	"sort"
)

// candidates is how many clients of each cluster the local search tries per pair of clusters,
// ranked by the KLD's gradient, when the pair is too large (exhaustivePairs) to try every swap.
const candidates = 16

// exhaustivePairs: a pair of clusters with at most this many possible swaps is searched whole.
const exhaustivePairs = 1024

// improvement is the least decrease of the KLD sum a step must bring (below it, rounding noise
// could make two steps undo each other forever).
const improvement = 1e-13

// maxPasses bounds the local search; it converges long before on every instance seen.
const maxPasses = 500

// part is one balanced clustering being improved.
type part struct {
	in      *instance
	work    *int // KLD evaluations left to the whole heuristic (restarts included)
	sizes   []int
	members [][]int
	counts  [][]float64
	f       []float64 // KLD of each cluster
}

func (p *part) sum() float64 {
	var s float64
	for _, v := range p.f {
		s += v
	}
	return s
}

// heuristic clusters the clients into k balanced clusters: restarts greedy constructions (the
// first in order of the clients' own divergence from the global distribution, largest first;
// the others in seeded random orders), each improved by local search, and keeps the best.
//
// work bounds the KLD evaluations of the whole search (restarts included), so that its time
// stays bounded at large n and k while staying deterministic: once it is spent, the current
// local search stops where it is (a valid, balanced clustering) and no restart begins. The
// first greedy construction always completes.
func (in *instance) heuristic(k, restarts int, seed uint64, work int) [][]int {
	n := len(in.x)
	dev := make([]float64, n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
		dev[i] = in.kld(in.x[i])
	}
	sort.SliceStable(order, func(a, b int) bool { return dev[order[a]] > dev[order[b]] })
	var best *part
	for r := 0; r < max(restarts, 1) && (r == 0 || work > 0); r++ {
		if r > 0 {
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		p := in.greedy(k, order)
		work -= len(order) * k
		p.work = &work
		p.localSearch()
		if best == nil || p.sum() < best.sum()-improvement {
			best = p
		}
	}
	for _, m := range best.members {
		sort.Ints(m)
	}
	return best.members
}

// greedy seeds the k clusters with the first k clients of order, then puts each next client
// into the cluster with room whose KLD it raises least.
func (in *instance) greedy(k int, order []int) *part {
	p := &part{in: in, sizes: balancedSizes(len(order), k), members: make([][]int, k),
		counts: make([][]float64, k), f: make([]float64, k)}
	for j := range p.counts {
		p.counts[j] = make([]float64, in.classes)
	}
	tmp := make([]float64, in.classes)
	for pos, i := range order {
		best, bestDelta := -1, 0.0
		if pos < k {
			best = pos
		} else {
			for j := range p.members {
				if len(p.members[j]) == p.sizes[j] {
					continue
				}
				copy(tmp, p.counts[j])
				addTo(tmp, in.x[i], 1)
				if d := in.kld(tmp) - p.f[j]; best < 0 || d < bestDelta {
					best, bestDelta = j, d
				}
			}
		}
		p.members[best] = append(p.members[best], i)
		addTo(p.counts[best], in.x[i], 1)
		p.f[best] = in.kld(p.counts[best])
	}
	return p
}

type scored struct {
	pos   int // index in the cluster's member list
	score float64
}

// localSearch swaps a client of one cluster with a client of another (and moves one from a
// larger cluster to a smaller, which keeps the balance) while that lowers the KLD sum. For each
// pair of clusters only the candidates the gradient ranks best are evaluated, exactly.
func (p *part) localSearch() {
	in := p.in
	k := len(p.members)
	gA, gB, d := make([]float64, in.classes), make([]float64, in.classes), make([]float64, in.classes)
	tA, tB := make([]float64, in.classes), make([]float64, in.classes)
	var cA, cB []scored
	for pass, improved := 0, true; improved && pass < maxPasses; pass++ {
		improved = false
		for a := 0; a < k; a++ {
			for b := a + 1; b < k; b++ {
				if *p.work <= 0 {
					return
				}
				A, B := p.members[a], p.members[b]
				in.grad(p.counts[a], p.f[a], gA)
				in.grad(p.counts[b], p.f[b], gB)
				for c := range d {
					d[c] = gA[c] - gB[c]
				}
				// Swapping u in A with v in B changes the sum by about d.x_v - d.x_u.
				limit := candidates
				if len(A)*len(B) <= exhaustivePairs {
					limit = max(len(A), len(B))
				}
				cA = topScored(cA[:0], A, in.x, d, true, limit)
				cB = topScored(cB[:0], B, in.x, d, false, limit)
				*p.work -= 2 * (len(cA)*len(cB) + len(cA) + len(cB))
				bestDelta, bu, bv := -improvement, -1, -1
				for _, u := range cA {
					for _, v := range cB {
						xu, xv := in.x[A[u.pos]], in.x[B[v.pos]]
						copy(tA, p.counts[a])
						addTo(tA, xu, -1)
						addTo(tA, xv, 1)
						copy(tB, p.counts[b])
						addTo(tB, xv, -1)
						addTo(tB, xu, 1)
						if delta := in.kld(tA) + in.kld(tB) - p.f[a] - p.f[b]; delta < bestDelta {
							bestDelta, bu, bv = delta, u.pos, v.pos
						}
					}
				}
				// Moves keep the balance only from the larger cluster of the pair to the smaller.
				if len(A) == len(B)+1 {
					for _, u := range cA {
						xu := in.x[A[u.pos]]
						copy(tA, p.counts[a])
						addTo(tA, xu, -1)
						copy(tB, p.counts[b])
						addTo(tB, xu, 1)
						if delta := in.kld(tA) + in.kld(tB) - p.f[a] - p.f[b]; delta < bestDelta {
							bestDelta, bu, bv = delta, u.pos, -1
						}
					}
				}
				if len(B) == len(A)+1 {
					for _, v := range cB {
						xv := in.x[B[v.pos]]
						copy(tA, p.counts[a])
						addTo(tA, xv, 1)
						copy(tB, p.counts[b])
						addTo(tB, xv, -1)
						if delta := in.kld(tA) + in.kld(tB) - p.f[a] - p.f[b]; delta < bestDelta {
							bestDelta, bu, bv = delta, -1, v.pos
						}
					}
				}
				if bu < 0 && bv < 0 {
					continue
				}
				p.apply(a, b, bu, bv)
				improved = true
			}
		}
	}
}

// apply swaps A[u] and B[v], or moves one of them when the other position is -1.
func (p *part) apply(a, b, u, v int) {
	in := p.in
	switch {
	case u >= 0 && v >= 0:
		cu, cv := p.members[a][u], p.members[b][v]
		p.members[a][u], p.members[b][v] = cv, cu
		addTo(p.counts[a], in.x[cu], -1)
		addTo(p.counts[a], in.x[cv], 1)
		addTo(p.counts[b], in.x[cv], -1)
		addTo(p.counts[b], in.x[cu], 1)
	case u >= 0:
		cu := p.members[a][u]
		p.members[a] = append(p.members[a][:u], p.members[a][u+1:]...)
		p.members[b] = append(p.members[b], cu)
		addTo(p.counts[a], in.x[cu], -1)
		addTo(p.counts[b], in.x[cu], 1)
	default:
		cv := p.members[b][v]
		p.members[b] = append(p.members[b][:v], p.members[b][v+1:]...)
		p.members[a] = append(p.members[a], cv)
		addTo(p.counts[b], in.x[cv], -1)
		addTo(p.counts[a], in.x[cv], 1)
	}
	p.f[a], p.f[b] = in.kld(p.counts[a]), in.kld(p.counts[b])
}

// topScored appends the members with the highest (high) or lowest d.x, at most limit.
func topScored(dst []scored, members []int, x [][]float64, d []float64, high bool, limit int) []scored {
	for pos, i := range members {
		var s float64
		for c, v := range x[i] {
			s += d[c] * v
		}
		if !high {
			s = -s
		}
		dst = append(dst, scored{pos, s})
	}
	if len(dst) > limit {
		sort.Slice(dst, func(i, j int) bool {
			if dst[i].score != dst[j].score {
				return dst[i].score > dst[j].score
			}
			return dst[i].pos < dst[j].pos
		})
		dst = dst[:limit]
	}
	return dst
}
