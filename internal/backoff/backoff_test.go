package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDoublesToMaxAndResets(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 75 * time.Millisecond}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Delay())
	}
	want := []time.Duration{10, 20, 40, 75, 75, 75}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	if b.Next() != 75*time.Millisecond {
		t.Fatalf("Next = %v after reaching the cap", b.Next())
	}
	b.Reset()
	if b.Next() != 10*time.Millisecond || b.Delay() != 10*time.Millisecond {
		t.Fatal("Reset did not start again from Min")
	}
}

func TestJitterStaysInItsBand(t *testing.T) {
	for _, j := range []float64{0.5, 1} {
		b := Backoff{Min: time.Second, Max: time.Second, Jitter: j}
		lo := time.Duration(float64(time.Second) * (1 - j))
		seen := map[time.Duration]bool{}
		for range 200 {
			d := b.Delay()
			if d < lo || d > time.Second {
				t.Fatalf("jitter %v: wait %v outside [%v, 1s]", j, d, lo)
			}
			seen[d] = true
		}
		if len(seen) < 100 {
			t.Fatalf("jitter %v: only %d distinct waits in 200: not random", j, len(seen))
		}
	}
}

func TestMaxBelowMin(t *testing.T) {
	b := Backoff{Min: 50 * time.Millisecond} // Max unset
	if b.Delay() != 50*time.Millisecond || b.Delay() != 50*time.Millisecond {
		t.Fatal("with Max < Min the delay should stay at Min")
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := Backoff{Min: time.Hour, Max: time.Hour}
	if b.Wait(ctx) {
		t.Fatal("Wait returned true on an ended context")
	}
	b = Backoff{Min: time.Microsecond, Max: time.Microsecond}
	if !b.Wait(context.Background()) {
		t.Fatal("Wait returned false on a live context")
	}
}
