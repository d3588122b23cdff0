package plan

import "math"

// assignRows solves the assignment problem for an r x c cost matrix with r <= c: each row to a
// distinct column, minimal total. It is the Hungarian method with potentials (O(r^2 c)); ties
// go the same way every time. It returns col[row].
func assignRows(w [][]float64) []int {
	r := len(w)
	if r == 0 {
		return nil
	}
	c := len(w[0])
	inf := math.Inf(1)
	u, v := make([]float64, r+1), make([]float64, c+1)
	p, way := make([]int, c+1), make([]int, c+1) // p[j]: row (1-based) matched to column j
	for i := 1; i <= r; i++ {
		p[0] = i
		j0 := 0
		minv := make([]float64, c+1)
		used := make([]bool, c+1)
		for j := range minv {
			minv[j] = inf
		}
		for {
			used[j0] = true
			i0, delta, j1 := p[j0], inf, 0
			for j := 1; j <= c; j++ {
				if used[j] {
					continue
				}
				if cur := w[i0-1][j-1] - u[i0] - v[j]; cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= c; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	col := make([]int, r)
	for j := 1; j <= c; j++ {
		if p[j] > 0 {
			col[p[j]-1] = j - 1
		}
	}
	return col
}

// transport assigns n clients to k aggregators, at most capacity[a] each, at minimal total
// cost (cost[i][a]; +Inf = not allowed), by successive shortest paths: each step adds the
// client whose cheapest augmenting path (client -> aggregator -> a client moved on to another
// aggregator ... -> an aggregator with room) costs least. With few aggregators the paths run
// over the k aggregators only, so a step is O(n k + k^3). It returns the aggregator of each
// client, or ok=false when some client cannot be placed.
func transport(cost [][]float64, capacity []int) (where []int, ok bool) {
	n := len(cost)
	k := len(capacity)
	inf := math.Inf(1)
	where = make([]int, n)
	for i := range where {
		where[i] = -1
	}
	load := make([]int, k)
	edge := make([][]float64, k) // edge[a][b]: cheapest move of a client of a to b
	via := make([][]int, k)
	for a := range edge {
		edge[a], via[a] = make([]float64, k), make([]int, k)
	}
	dist, next := make([]float64, k), make([]int, k)
	for step := 0; step < n; step++ {
		for a := range edge {
			for b := range edge[a] {
				edge[a][b], via[a][b] = inf, -1
			}
		}
		for i, a := range where {
			if a < 0 {
				continue
			}
			for b := 0; b < k; b++ {
				if b != a && cost[i][b] < inf {
					if d := cost[i][b] - cost[i][a]; d < edge[a][b] {
						edge[a][b], via[a][b] = d, i
					}
				}
			}
		}
		// dist[a]: cheapest way to make room at a (0 when it has room), by Bellman-Ford; the
		// residual graph of a min-cost flow has no negative cycle.
		for a := range dist {
			dist[a], next[a] = inf, -1
			if load[a] < capacity[a] {
				dist[a] = 0
			}
		}
		for range k {
			changed := false
			for a := range k {
				for b := range k {
					if via[a][b] >= 0 && dist[b] < inf && edge[a][b]+dist[b] < dist[a]-1e-12 {
						dist[a], next[a] = edge[a][b]+dist[b], b
						changed = true
					}
				}
			}
			if !changed {
				break
			}
		}
		bi, ba, bc := -1, -1, inf
		for i, a := range where {
			if a >= 0 {
				continue
			}
			for b := range k {
				if c := cost[i][b] + dist[b]; cost[i][b] < inf && c < bc {
					bi, ba, bc = i, b, c
				}
			}
		}
		if bi < 0 {
			return where, false
		}
		// Walk the path: bi takes ba, the client moved out of ba takes the next, and so on.
		where[bi] = ba
		a := ba
		for next[a] >= 0 {
			b := next[a]
			mover := via[a][b]
			where[mover] = b
			a = b
		}
		load[a]++
	}
	return where, true
}
