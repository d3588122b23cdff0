package gateway

import (
	"sync"
	"testing"
)

// TestSecondCounts: concurrent adds are all counted; a slot reused 64 s later starts again
// from zero, and an old second reads 0 once its slot has moved on.
func TestSecondCounts(t *testing.T) {
	var c secondCounts
	const sec = 1_790_000_000
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				c.add(sec)
				c.add(sec + 1)
			}
		}()
	}
	wg.Wait()
	if c.count(sec) != 8000 || c.count(sec+1) != 8000 || c.count(sec+2) != 0 {
		t.Errorf("counts %d, %d, %d: want 8000, 8000, 0", c.count(sec), c.count(sec+1), c.count(sec+2))
	}
	c.add(sec + 64) // the same slot as sec
	if c.count(sec+64) != 1 || c.count(sec) != 0 {
		t.Errorf("after the slot moved on: %d (want 1), old second %d (want 0)", c.count(sec+64), c.count(sec))
	}
}
