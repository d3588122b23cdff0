package rtdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/store"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// TestHubWaitApplied: once WaitApplied(rev) returns, a write's event is already queued on the
// subscription; a revision with no key under the prefix (a read's) is reached through a
// progress notification; a closed hub says so.
func TestHubWaitApplied(t *testing.T) {
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvtest.URL(t)}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := hub.New(s.kv, hub.Config{Prefix: cfg.Prefix})
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
		_, rev, err := s.st.WriteRev(ctx, "default", []store.Update{{Path: []string{"w", "k"}, Val: tree.Leaf(`"v"`)}, {Path: []string{"w", "i"}, Val: tree.Leaf(string(rune('0' + i%10)))}}, nil)
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
	if err := h.WaitApplied(ctx, resp.Header.Revision+1); !errors.Is(err, hub.ErrClosed) {
		t.Errorf("after Close: %v, want ErrHubClosed", err)
	}
}
