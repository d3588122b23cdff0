package fabric

import (
	"testing"
	"time"
)

// A fabric clock reading behind CLOCK_MONOTONIC (its pairing at start was off) makes the timerfd
// fire before the fabric thinks the programmed time has come. The expired timer must still be
// re-armed: packets in flight were once stranded for good, and the testbed stopped delivering.
func TestClockBehindTimerfdDoesNotStall(t *testing.T) {
	testClockSkew = int64(3 * time.Millisecond)
	tn := newTestNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Delay: time.Millisecond}}})
	testClockSkew = 0
	for i := 1; i <= 20; i++ {
		tn.send(0, 1, 100, byte(i))
		if got := tn.eps[1].waitFor(t, i, 30*time.Second); len(got) != i {
			t.Fatalf("packet %d not delivered within 30s (%d arrived): the timer stalled", i, len(got))
		}
	}
}

// newClock pairs the two clocks within a few microseconds. A reading is only judged when the
// reference readings around it are close together: a goroutine preempted between them (a busy
// machine) says nothing about the pairing.
func TestNewClockPairing(t *testing.T) {
	c := newClock()
	var worst time.Duration
	judged := 0
	for range 1000 {
		before := newClockRef()
		now := c.now()
		after := newClockRef()
		if after-before > int64(20*time.Microsecond) {
			continue
		}
		judged++
		d := time.Duration(now - (before+after)/2)
		worst = max(worst, d, -d)
	}
	if judged == 0 {
		t.Fatal("no undisturbed reading in 1000 tries")
	}
	if worst > 200*time.Microsecond {
		t.Errorf("fabric clock off CLOCK_MONOTONIC by up to %v (%d readings judged)", worst, judged)
	}
}
