package qos

import (
	"math"
	"testing"
)

func TestProxyProximityWeights(t *testing.T) {
	tests := []struct {
		l     []float64
		alpha float64
	}{
		{[]float64{1, 3, 10}, 0.8},
		{[]float64{1, 3, 10}, 1},
		{[]float64{1, 3, 10}, 0},
		{[]float64{2000, 2002}, 0.5}, // far away: exp(-1000) underflows without the shift
	}
	for _, tt := range tests {
		w := ProximityWeights(tt.l, tt.alpha)
		n := float64(len(tt.l))
		sum, total := 0.0, 0.0
		for _, l := range tt.l {
			sum += math.Exp(-(l - tt.l[0]) / 2) // same ratios as exp(-l/2), finite
		}
		for i, l := range tt.l {
			want := (1-tt.alpha)/n + tt.alpha*math.Exp(-(l-tt.l[0])/2)/sum
			if math.Abs(w[i]-want) > 1e-12 || math.IsNaN(w[i]) {
				t.Errorf("l=%v alpha=%v: w[%d] = %v, want %v", tt.l, tt.alpha, i, w[i], want)
			}
			total += w[i]
		}
		if math.Abs(total-1) > 1e-9 {
			t.Errorf("l=%v alpha=%v: weights sum to %v", tt.l, tt.alpha, total)
		}
	}
}
