package mvcc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestWatchRingBoundedByBytes: large values push old revisions out of the in-memory ring long
// before 8192 of them; a watcher that starts behind the ring still gets every event, from
// Pebble, in order and with its value.
func TestWatchRingBoundedByBytes(t *testing.T) {
	s := openTest(t, nil)
	value := strings.Repeat("v", 1<<20) // 1 MiB: the ring holds ~32 revisions of these
	first := put(t, s, "k0", value)
	// 48 MiB in all, half again the ring's 32 MiB: the watcher reads the first ~16 revisions
	// from Pebble and the rest from the ring (80 cost 2/3 more CPU and proved no more).
	const n = 48
	for i := 1; i < n; i++ {
		put(t, s, fmt.Sprintf("k%d", i), value)
	}
	h := s.watch
	h.mu.RLock()
	held, bytesHeld, oldest := h.last-h.first+1, h.bytes, h.first
	h.mu.RUnlock()
	if bytesHeld > ringBytes || held >= n || oldest <= first {
		t.Fatalf("ring holds %d revisions from %d (%d bytes); want fewer than %d within %d bytes", held, oldest, bytesHeld, n, ringBytes)
	}
	sum := 0
	h.mu.RLock()
	for i := range h.size {
		sum += h.size[i]
	}
	h.mu.RUnlock()
	if sum != bytesHeld {
		t.Errorf("slot sizes add to %d, the hub counts %d", sum, bytesHeld)
	}

	w, err := s.NewWatcher(WatchSpec{Key: []byte("k"), End: []byte("l"), StartRev: first})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < n {
		evs, compacted, err := w.Next(16)
		if err != nil || compacted != 0 {
			t.Fatalf("Next: %v, compacted %d", err, compacted)
		}
		if len(evs) == 0 {
			t.Fatalf("no more events after %d of %d", len(got), n)
		}
		for _, ev := range evs {
			if !bytes.Equal(ev.Kv.Value, []byte(value)) {
				t.Fatalf("event %s: value of %d bytes", ev.Kv.Key, len(ev.Kv.Value))
			}
			got = append(got, string(ev.Kv.Key))
		}
	}
	for i, k := range got {
		if k != fmt.Sprintf("k%d", i) {
			t.Fatalf("event %d is %s: out of order", i, k)
		}
	}
}
