package replication

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/continuum-project/continuum/internal/testenv"
)

// blackhole is a TCP proxy that cuts a link as a partition that drops packets does: during a
// cut nothing is forwarded either way and no connection is closed or reset, and connections
// made during it get no byte through (as a dial whose SYN is lost, it ends at its deadline).
// The connections that were open across a cut stay mute after Heal, as a real one may for many
// seconds once its retransmission timer has backed off; new connections work.
type blackhole struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	cut      bool
	cutDials int // connections accepted during a cut
	links    []*proxied
	wg       sync.WaitGroup
}

type proxied struct {
	dead     atomic.Bool
	down, up net.Conn // up is nil for a connection accepted during a cut
}

// newBlackhole proxies to target until cleanup.
func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target}
	b.wg.Add(1)
	go b.serve()
	t.Cleanup(b.close)
	return b
}

func (b *blackhole) url() string { return "http://" + b.ln.Addr().String() }

func (b *blackhole) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		p := &proxied{down: c}
		b.mu.Lock()
		if b.cut {
			b.cutDials++
			p.dead.Store(true)
			b.links = append(b.links, p)
			b.mu.Unlock()
			continue
		}
		b.mu.Unlock()
		up, err := net.Dial("tcp", b.target)
		if err != nil {
			c.Close()
			continue
		}
		p.up = up
		b.mu.Lock()
		if b.cut {
			p.dead.Store(true)
		}
		b.links = append(b.links, p)
		b.mu.Unlock()
		b.wg.Add(2)
		go b.forward(p, p.up, p.down)
		go b.forward(p, p.down, p.up)
	}
}

// forward copies from src to dst until the link dies (then it stops reading, so the sender's
// buffers fill as over a dead link) or either end closes.
func (b *blackhole) forward(p *proxied, dst, src net.Conn) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if p.dead.Load() {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if !p.dead.Load() {
				dst.Close()
				src.Close()
			}
			return
		}
	}
}

// Cut stops all traffic through the proxy.
func (b *blackhole) Cut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut = true
	for _, p := range b.links {
		p.dead.Store(true)
	}
}

// Heal lets new connections through.
func (b *blackhole) Heal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut = false
}

func (b *blackhole) dialsDuringCut() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cutDials
}

func (b *blackhole) close() {
	b.ln.Close()
	b.mu.Lock()
	for _, p := range b.links {
		p.down.Close()
		if p.up != nil {
			p.up.Close()
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// logAttr returns the value of key=value in a text log line.
func logAttr(line, key string) string {
	_, v, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

// TestPartitionHealConverges cuts the link between two members without a reset, writes on both
// sides, heals it, and checks that both hold every change within a deadline, and that each
// reported its catch-up (log line and histogram).
func TestPartitionHealConverges(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	a, b := &member{name: "a"}, &member{name: "b"}
	for _, m := range []*member{a, b} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m.ln, m.url = ln, "http://"+ln.Addr().String()
	}
	toA, toB := newBlackhole(t, a.ln.Addr().String()), newBlackhole(t, b.ln.Addr().String())
	startMember(t, a, []string{toB.url()}, 2, func(c *Config) { c.Logger = logger.With("member", "a") })
	startMember(t, b, []string{toA.url()}, 2, func(c *Config) { c.Logger = logger.With("member", "b") })
	ms := map[string]*member{"a": a, "b": b}
	putKV(t, a.store, "before", "a")
	putKV(t, b.store, "before-b", "b")
	waitConverged(t, ms, 10*time.Second)

	toA.Cut()
	toB.Cut()
	for i := 0; i < 20; i++ {
		putKV(t, a.store, fmt.Sprintf("a%d", i), "v")
		putKV(t, b.store, fmt.Sprintf("b%d", i), "v")
	}
	putKV(t, a.store, "both", "a")
	putKV(t, b.store, "both", "b")
	// Heal once both members have found their streams dead and tried to reconnect through the
	// cut: the worst case, a dial in flight that the heal does not save.
	testenv.EventuallyNoError(t, 30*time.Second, "both streams found dead and redialled through the cut", func() error {
		if a.repl.Peers()[0].Connected || b.repl.Peers()[0].Connected || toA.dialsDuringCut() == 0 || toB.dialsDuringCut() == 0 {
			return fmt.Errorf("a %+v, b %+v, dials %d %d", a.repl.Peers()[0], b.repl.Peers()[0], toA.dialsDuringCut(), toB.dialsDuringCut())
		}
		return nil
	})
	healed := time.Now()
	toA.Heal()
	toB.Heal()
	waitConverged(t, ms, 5*time.Second)
	t.Logf("converged %v after the heal (polled every 10 ms)", time.Since(healed).Round(time.Millisecond))

	// Each member reports when it holds what its peer held when the stream came back.
	var la, lb []string
	testenv.EventuallyNoError(t, 30*time.Second, "catch-up lines from both members", func() error {
		la = logs.Lines(`msg="caught up with peer"`, "member=a", "peer=b", "disconnected_for=")
		lb = logs.Lines(`msg="caught up with peer"`, "member=b", "peer=a", "disconnected_for=")
		if len(la) == 0 || len(lb) == 0 {
			return fmt.Errorf("logged so far:\n%s", strings.Join(logs.Lines("member="), "\n"))
		}
		return nil
	})
	for _, l := range append(la, lb...) {
		at, err := time.Parse(time.RFC3339Nano, logAttr(l, "caught_up_at"))
		if err != nil {
			t.Fatalf("caught_up_at in %q: %v", l, err)
		}
		if logAttr(l, "changes") == "0" || at.Before(healed) {
			t.Errorf("catch-up line after a cut with writes on both sides: %s", l)
		}
		t.Logf("%s caught up %v after the heal", logAttr(l, "member"), at.Sub(healed).Round(time.Millisecond))
	}
	for _, m := range []*member{a, b} {
		if len(logs.Lines(`msg="peer stream lost"`, "member="+m.name, "lost_at=")) == 0 ||
			len(logs.Lines(`msg="peer stream open"`, "member="+m.name, "disconnected_for=")) == 0 {
			t.Errorf("%s logged no stream loss or reopening:\n%s", m.name, strings.Join(logs.Lines("member="+m.name), "\n"))
		}
		if n := catchUpCount(t, m.repl); n == 0 {
			t.Errorf("%s: continuum_kv_replication_catchup_seconds has no sample", m.name)
		}
	}
}

// catchUpCount returns how many catch-ups r's histogram holds, over all peers.
func catchUpCount(t *testing.T, r *Replicator) uint64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "continuum_kv_replication_catchup_seconds" {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}
