package fabric

import (
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/testenv"
)

// sockEndpoint is a pollable endpoint on a datagram socket pair: the test sends packets into
// peer, the fabric's poller reads them from fd; deliveries are recorded with their time.
type sockEndpoint struct {
	fd, peer int
	mu       sync.Mutex
	got      []arrival
	notify   chan struct{}
}

func newSockEndpoint(t *testing.T) *sockEndpoint {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &sockEndpoint{fd: fds[0], peer: fds[1], notify: make(chan struct{}, 1)}
	t.Cleanup(func() { unix.Close(s.peer) })
	return s
}

func (s *sockEndpoint) pollFD() int { return s.fd }

func (s *sockEndpoint) readNow(bufs [][]byte, sizes []int, stamps []int64) (int, error) {
	k := 0
	for k < len(bufs) {
		n, err := unix.Read(s.fd, bufs[k][VnetHdrLen:])
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			return k, err
		}
		clear(bufs[k][:VnetHdrLen])
		sizes[k], stamps[k] = VnetHdrLen+n, 0
		k++
	}
	return k, nil
}

func (s *sockEndpoint) ReadBatch([][]byte, []int, []int64) (int, error) {
	return 0, errors.New("a pollable endpoint is read by the poller")
}

func (s *sockEndpoint) WriteBatch(pkts [][]byte) (int, error) {
	s.mu.Lock()
	for _, p := range pkts {
		s.got = append(s.got, arrival{at: time.Now(), pkt: append([]byte(nil), p[VnetHdrLen:]...)})
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(pkts), nil
}

func (s *sockEndpoint) Offloads() bool { return false }
func (s *sockEndpoint) Close() error   { return unix.Close(s.fd) }

func (s *sockEndpoint) waitFor(t *testing.T, n int, d time.Duration) []arrival {
	t.Helper()
	deadline := time.After(d)
	for {
		s.mu.Lock()
		got := append([]arrival(nil), s.got...)
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-s.notify:
		case <-deadline:
			return got
		}
	}
}

// Two pollable nodes exchange packets in both directions at once: the one poller thread (no
// reader threads) reads both sockets, holds every packet for the link's delay, keeps each
// direction's order, counts them, and stops on Close.
func TestPollerServesPollableEndpoints(t *testing.T) {
	const delay = 2 * time.Millisecond
	eps := []*sockEndpoint{newSockEndpoint(t), newSockEndpoint(t)}
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}
	f, err := New(Config{Seed: 1, Nodes: []Node{{Name: "a", Addr: ips[0], Batch: eps[0]}, {Name: "b", Addr: ips[1], Batch: eps[1]}},
		Links: []Link{{A: 0, B: 1, Props: Props{Delay: delay}}}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			f.Close()
		}
	})
	testenv.Eventually(t, 30*time.Second, "the poller thread started", func() bool { return f.Stats().Threads >= 1 })
	if st := f.Stats(); st.Threads != 1 {
		t.Fatalf("fabric runs %d threads for two pollable endpoints, want the poller alone", st.Threads)
	}
	const n = 100
	sent := [2][]time.Time{}
	for i := range n {
		for from := range 2 {
			sent[from] = append(sent[from], time.Now())
			if _, err := unix.Write(eps[from].peer, ipPacket(ips[1-from], 64, byte(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for from := range 2 {
		to := 1 - from
		got := eps[to].waitFor(t, n, 30*time.Second)
		if len(got) != n {
			t.Fatalf("%s got %d of %d packets", f.nodes[to].Name, len(got), n)
		}
		for i, a := range got {
			if a.pkt[4] != byte(i) {
				t.Fatalf("%s: packet %d is #%d: a direction must keep its order", f.nodes[to].Name, i, a.pkt[4])
			}
			if early := sent[from][i].Add(delay - earliest); a.at.Before(early) {
				t.Errorf("%s: packet %d delivered %v after it was sent, link delay %v", f.nodes[to].Name, i, a.at.Sub(sent[from][i]), delay)
			}
		}
	}
	st := f.Stats()
	for _, l := range st.Links {
		if l.Packets != n || l.Late.Count() != n {
			t.Errorf("link %s>%s: %d packets, lateness of %d; want %d each", l.From, l.To, l.Packets, l.Late.Count(), n)
		}
	}
	done := make(chan error)
	go func() { done <- f.Close() }()
	select {
	case err := <-done:
		closed = true
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not stop the poller within 30s")
	}
}
