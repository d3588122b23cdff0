package plan

import "math"

// zeroShare stands for a class a distribution has no sample of, as in the seed: the shares are
// not renormalised, which keeps the seed's figures (0.22441057019914015 for its topology).
// KLD stays >= 0 all the same: a class absent globally is absent from every cluster, so a
// cluster's shares sum to at least the global ones (log-sum inequality), which the exact
// search's pruning relies on.
const zeroShare = 1e-4

// instance is the clustering problem: the clients' class counts and the global distribution.
type instance struct {
	classes int
	x       [][]float64 // x[i][c]: samples of class c on client i
	q       []float64   // global distribution over every client, zero shares floored
}

func newInstance(classes int, data []map[int]int) *instance {
	in := &instance{classes: classes, x: make([][]float64, len(data))}
	total := make([]float64, classes)
	for i, d := range data {
		in.x[i] = make([]float64, classes)
		for c, v := range d {
			in.x[i][c] = float64(v)
			total[c] += float64(v)
		}
	}
	in.q = distribution(total)
	return in
}

// distribution is counts / total with zero shares floored to zeroShare (nil for no samples).
// It divides integer-valued sums exactly as the seed does, so figures match to the last bit.
func distribution(counts []float64) []float64 {
	var total float64
	for _, v := range counts {
		total += v
	}
	if total == 0 {
		return nil
	}
	p := make([]float64, len(counts))
	for i, v := range counts {
		p[i] = v / total
		if p[i] == 0 {
			p[i] = zeroShare
		}
	}
	return p
}

// kld is KL(counts' distribution || global); 0 for a cluster without samples.
func (in *instance) kld(counts []float64) float64 {
	var total float64
	for _, v := range counts {
		total += v
	}
	if total == 0 {
		return 0
	}
	var s float64
	for i, v := range counts {
		p := v / total
		if p == 0 {
			p = zeroShare
		}
		s += p * math.Log(p/in.q[i])
	}
	return s
}

// grad is the gradient of kld with respect to the counts, into g: (log(p_c/q_c) - kld) / total.
// The heuristic uses it only to rank candidate moves, which are then evaluated exactly.
func (in *instance) grad(counts []float64, f float64, g []float64) {
	var total float64
	for _, v := range counts {
		total += v
	}
	if total == 0 {
		clear(g)
		return
	}
	for i, v := range counts {
		p := v / total
		if p == 0 {
			p = zeroShare
		}
		g[i] = (math.Log(p/in.q[i]) - f) / total
	}
}

// meanKLD is the mean KLD of the clusters given as client index lists, summed in order.
func (in *instance) meanKLD(clusters [][]int) float64 {
	if len(clusters) == 0 {
		return 0
	}
	counts := make([]float64, in.classes)
	var sum float64
	for _, cl := range clusters {
		clear(counts)
		for _, i := range cl {
			addTo(counts, in.x[i], 1)
		}
		sum += in.kld(counts)
	}
	return sum / float64(len(clusters))
}

func addTo(dst, x []float64, sign float64) {
	for c, v := range x {
		dst[c] += sign * v
	}
}

// balancedSizes is the seed's split of n clients into k clusters: the first n%k get one more.
func balancedSizes(n, k int) []int {
	sizes := make([]int, k)
	for i := range sizes {
		sizes[i] = n / k
		if i < n%k {
			sizes[i]++
		}
	}
	return sizes
}

// partitions is the number of balanced partitions of n clients into k unlabelled clusters:
// n! / ((d+1)!^a d!^b a! b!) with d = n/k, a = n%k, b = k-a (as a float64; +Inf when huge).
func partitions(n, k int) float64 {
	if k <= 0 || n < k {
		return 0
	}
	d, a := n/k, n%k
	b := k - a
	lf := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	l := lf(n) - float64(a)*lf(d+1) - float64(b)*lf(d) - lf(a) - lf(b)
	return math.Round(math.Exp(l))
}

// sameKLD says two mean KLDs are equal up to rounding (sums taken in different orders).
func sameKLD(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// BalancedPartitions is how many clusterings of n clients into k balanced clusters there are
// (clusters of equal size interchangeable): what the exact min-kld search enumerates, against
// Options.ExactMaxPartitions. The seed's search visited k! times as many.
func BalancedPartitions(n, k int) float64 { return partitions(n, k) }
