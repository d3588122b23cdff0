package tree

import (
	"testing"
	"time"
)

func TestPushIDsWithinOneMillisecond(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	g := NewPushIDs(func() time.Time { return at })
	prev := g.Next()
	for range 1000 {
		id := g.Next()
		if len(id) != 20 || id <= prev || id[:8] != prev[:8] {
			t.Fatalf("%q after %q", id, prev)
		}
		prev = id
	}
	at = at.Add(-time.Second) // the clock steps back: order holds
	if id := g.Next(); id <= prev {
		t.Fatalf("%q after %q with the clock stepped back", id, prev)
	}
}
