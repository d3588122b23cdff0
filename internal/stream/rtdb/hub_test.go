package rtdb

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/hub"
	"github.com/continuum-project/continuum/internal/stream/rtdb/sse"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestHubSlowListener: a subscription nobody reads stays bounded: its queue is folded, and as
// the reader never took even the first put, it becomes one full put of the current value; a
// reader taking it then has the right state.
func TestHubSlowListener(t *testing.T) {
	kvURL := kvtest.URL(t)
	base := startRTDB(t, func(c *Config) { c.KVEndpoints = []string{kvURL} })
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvURL}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := hub.New(s.kv, hub.Config{Prefix: cfg.Prefix, ListenerBufferBytes: 64})
	defer h.Close()
	ctx := context.Background()
	sub, err := h.Subscribe(ctx, "default", []string{"slow"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	fast, _ := h.Subscribe(ctx, "default", []string{"slow"}, nil)
	defer fast.Close()
	for i := 0; i < 50; i++ {
		do(t, "PUT", fmt.Sprintf("%s/slow/k%d.json", base, i), `"0123456789"`)
	}
	var fs any
	for m, _ := fs.(map[string]any); len(m) < 50; m, _ = fs.(map[string]any) { // the reader keeps up
		evs, err := fast.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if fs, err = applyEvent(fs, sse.StreamEvent{Type: e.Type, Data: sseData(e)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Eventually(t, 10*time.Second, "slow listener coalesced", func() bool { return sub.Overflows() > 0 })
	evs, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var state any
	for _, e := range evs {
		if state, err = applyEvent(state, sse.StreamEvent{Type: e.Type, Data: sseData(e)}); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := state.(map[string]any); len(m) != 50 {
		t.Fatalf("slow listener has %d children after %d events, want 50", len(m), len(evs))
	}
	if len(evs) > 3 {
		t.Fatalf("slow listener queue holds %d events; want it coalesced", len(evs))
	}
}

func sseData(e *hub.Event) []byte {
	b, _ := json.Marshal(map[string]any{"path": e.Path, "data": e.Data})
	return b
}

// TestHubResync: what the hub does when its watch fails (a compacted revision): every listened
// path is read again and each listener's queue becomes a full put; later writes follow it.
func TestHubResync(t *testing.T) {
	kvURL := kvtest.URL(t)
	base := startRTDB(t, func(c *Config) { c.KVEndpoints = []string{kvURL} })
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvURL}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	sub, err := s.Hub().Subscribe(ctx, "default", []string{"rs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	next := func() *hub.Event {
		t.Helper()
		nctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		evs, err := sub.Next(nctx)
		if err != nil || len(evs) != 1 {
			t.Fatalf("want one event, got %d: %v", len(evs), err)
		}
		return evs[0]
	}
	if e := next(); e.Type != "put" || e.Path != "/" || string(e.Data) != "null" {
		t.Fatalf("first event %s %s %s", e.Type, e.Path, e.Data)
	}
	do(t, "PUT", base+"/rs/a.json", `1`)
	if e := next(); e.Path != "/a" {
		t.Fatalf("got %s %s %s", e.Type, e.Path, e.Data)
	}
	s.Hub().Resync()
	if e := next(); e.Type != "put" || e.Path != "/" || string(e.Data) != `{"a":1}` {
		t.Fatalf("after resync: %s %s %s, want a full put", e.Type, e.Path, e.Data)
	}
	do(t, "PUT", base+"/rs/b.json", `2`)
	if e := next(); e.Path != "/b" || string(e.Data) != "2" {
		t.Fatalf("after resync, a write: %s %s %s", e.Type, e.Path, e.Data)
	}
}
