package replication

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/continuum-project/continuum/internal/testenv"
)

// startLingeringPair starts a, whose Sync streams linger for linger after each send, and b,
// which pulls from a, and waits until b's stream from a is open.
func startLingeringPair(t *testing.T, linger time.Duration) (a, b *member) {
	t.Helper()
	ms := map[string]*member{}
	for _, name := range []string{"a", "b"} {
		ms[name] = listenMember(t, name)
	}
	a, b = ms["a"], ms["b"]
	slow := func(c *Config) { c.Linger, c.Heartbeat = linger, 4*linger }
	startMember(t, a, nil, 2, slow)
	startMember(t, b, []string{a.url}, 2, slow)
	testenv.Eventually(t, 10*time.Second, "b's stream from a to open", func() bool {
		ps := b.repl.Peers()
		return len(ps) == 1 && ps[0].Connected
	})
	return a, b
}

// holdsAll reports whether b holds every change a holds.
func holdsAll(a, b *member) bool { return b.store.VersionVector().Covers(a.store.VersionVector()) }

func TestLingerGathersChanges(t *testing.T) {
	const linger = time.Second
	a, b := startLingeringPair(t, linger)

	// After a quiet spell a change goes at once.
	start := time.Now()
	putKV(t, a.store, "first", "v")
	testenv.Eventually(t, 10*time.Second, "the first change at b", func() bool { return holdsAll(a, b) })
	if d := time.Since(start); d >= linger/2 {
		t.Errorf("a change after a quiet spell took %v to reach b: it waited for the %v linger", d, linger)
	}
	before := b.repl.Peers()[0].Batches

	// Changes made right after a send wait for the linger and travel together.
	for i := range 30 {
		putKV(t, a.store, fmt.Sprintf("k%d", i), "v")
	}
	testenv.Eventually(t, 10*time.Second, "the 30 changes at b", func() bool { return holdsAll(a, b) })
	if n := b.repl.Peers()[0].Batches - before; n > 2 {
		t.Errorf("30 changes made within the linger came in %d messages, want 1 (2 if the puts outlasted it)", n)
	}
}

func TestWaitHoldersCutsLinger(t *testing.T) {
	const linger = 3 * time.Second
	a, b := startLingeringPair(t, linger)
	putKV(t, a.store, "first", "v")
	testenv.Eventually(t, 10*time.Second, "the first change at b", func() bool { return holdsAll(a, b) })

	// a now lingers for 3 s; a client waiting for a second copy must not wait for it.
	resp, err := a.store.Put(context.Background(), &pb.PutRequest{Key: []byte("second"), Value: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.store.ChangeAt(resp.Header.Revision)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), linger/2)
	defer cancel()
	if n, err := a.repl.WaitHolders(ctx, c.ID, 2); err != nil || n != 2 {
		t.Fatalf("WaitHolders during a %v linger: %d members, %v; want 2 well within the linger", linger, n, err)
	}
}
