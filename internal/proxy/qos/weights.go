package qos

import (
	"math"
	"time"
)

// HeadroomScore is (outstanding+1) / headroom, headroom being the share of the latency limit
// the estimate leaves free (at least 5%, so that an instance at the limit still takes some
// load when the others are busy). Without a limit it is least-outstanding.
func HeadroomScore(outstanding int64, est, limit time.Duration) float64 {
	h := 1.0
	if limit > 0 {
		h = max(float64(limit-est)/float64(limit), 0.05)
	}
	return float64(outstanding+1) / h
}

// ProximityWeights is proxy-mity's rule: w_i = (1-alpha)/n + alpha*exp(-l_i/2)/sum_j exp(-l_j/2)
// with l in milliseconds. The exponentials are taken relative to the smallest l, which leaves
// the ratios unchanged but keeps them from all underflowing to 0 when every instance is far.
func ProximityWeights(lms []float64, alpha float64) []float64 {
	n := float64(len(lms))
	lmin := math.Inf(1)
	for _, l := range lms {
		lmin = min(lmin, l)
	}
	e := make([]float64, len(lms))
	sum := 0.0
	for i, l := range lms {
		e[i] = math.Exp(-(l - lmin) / 2)
		sum += e[i]
	}
	for i := range e {
		e[i] = (1-alpha)/n + alpha*e[i]/sum
	}
	return e
}

// WeightedIndex picks index i with probability w[i]/sum(w), given u uniform in [0, 1).
func WeightedIndex(w []float64, u float64) int {
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	target := u * sum
	for i, x := range w {
		if target < x {
			return i
		}
		target -= x
	}
	return len(w) - 1
}
