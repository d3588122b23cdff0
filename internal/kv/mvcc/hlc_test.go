package mvcc

import (
	"sync"
	"testing"
)

func TestClockMonotonic(t *testing.T) {
	tests := []struct {
		name     string
		physical []int64 // successive physical readings
		observe  map[int]Timestamp
		want     []Timestamp
	}{
		{"physical advances", []int64{10, 20, 30}, nil,
			[]Timestamp{{10, 0}, {20, 0}, {30, 0}}},
		{"physical stalls", []int64{10, 10, 10}, nil,
			[]Timestamp{{10, 0}, {10, 1}, {10, 2}}},
		{"physical goes back", []int64{10, 5, 11}, nil,
			[]Timestamp{{10, 0}, {10, 1}, {11, 0}}},
		{"observe future", []int64{10, 11, 100}, map[int]Timestamp{1: {50, 3}},
			[]Timestamp{{10, 0}, {50, 4}, {100, 0}}},
		{"observe past ignored", []int64{10, 11}, map[int]Timestamp{1: {1, 9}},
			[]Timestamp{{10, 0}, {11, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			c := NewClock(func() int64 { v := tt.physical[i]; return v })
			for j, want := range tt.want {
				i = j
				if ts, ok := tt.observe[j]; ok {
					c.Observe(ts)
				}
				if got := c.Now(); got != want {
					t.Fatalf("reading %d: got %v, want %v", j, got, want)
				}
			}
		})
	}
}

func TestClockConcurrentStrictlyIncreasing(t *testing.T) {
	c := NewClock(func() int64 { return 42 })
	const n, g = 1000, 4
	out := make(chan Timestamp, n*g)
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				out <- c.Now()
			}
		}()
	}
	wg.Wait()
	close(out)
	seen := map[Timestamp]bool{}
	for ts := range out {
		if seen[ts] {
			t.Fatalf("duplicate reading %v", ts)
		}
		seen[ts] = true
	}
	if last := c.Last(); last != (Timestamp{42, n*g - 1}) {
		t.Fatalf("last = %v", last)
	}
}
