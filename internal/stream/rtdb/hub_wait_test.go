package rtdb

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHubWaitApplied: once WaitApplied(rev) returns, a write's event is already queued on the
// subscription; a revision with no key under the prefix (a read's) is reached through a
// progress notification; a closed hub says so.
func TestHubWaitApplied(t *testing.T) {
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{startKV(t)}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := NewHub(s.kv, HubConfig{Prefix: cfg.Prefix})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.WaitApplied(ctx, 1<<40); err != nil { // nothing subscribed: nothing to wait for
		t.Fatalf("before any subscription: %v", err)
	}
	sub, err := h.Subscribe(ctx, "default", []string{"w"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Next(ctx); err != nil { // the first value
		t.Fatal(err)
	}
	for i := range 20 {
		_, rev, err := s.st.writeRev(ctx, "default", []update{{[]string{"w", "k"}, leaf(`"v"`)}, {[]string{"w", "i"}, leaf(string(rune('0' + i%10)))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.WaitApplied(ctx, rev); err != nil {
			t.Fatal(err)
		}
		evs, err := sub.TryNext()
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Rev != rev {
			t.Fatalf("write %d at revision %d: queued %d events (err %v), want the last at that revision", i, rev, len(evs), err)
		}
	}
	// A key outside the prefix: the hub's watch sees no event at its revision.
	resp, err := s.kv.Put(ctx, "/outside-the-prefix", "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WaitApplied(ctx, resp.Header.Revision); err != nil {
		t.Fatalf("revision without an event: %v", err)
	}
	h.Close()
	if err := h.WaitApplied(ctx, resp.Header.Revision+1); !errors.Is(err, ErrHubClosed) {
		t.Errorf("after Close: %v, want ErrHubClosed", err)
	}
}
