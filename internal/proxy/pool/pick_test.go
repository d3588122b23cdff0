package pool

import (
	"net"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// BenchmarkQoSObservePick is the qos strategy's work per request, without the network: pick
// an instance of the pool, then record its answer (the windowed quantile, the pool's
// membership). It must not allocate (TestQoSObservePickDoesNotAllocate, docs/proxy.md).
func BenchmarkQoSObservePick(b *testing.B) {
	_, step := qosPoolOfThree(b)
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

func TestQoSObservePickDoesNotAllocate(t *testing.T) {
	_, step := qosPoolOfThree(t)
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("%v allocations per pick and record, want 0", n)
	}
}

// qosPoolOfThree is a qos service with three instances in its pool (their spare connections
// dial a local listener) and step, one request's pick and record.
func qosPoolOfThree(tb testing.TB) (*Service, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	cfg := config.DefaultServiceConfig()
	cfg.QoS.Latency = config.Dur(80 * time.Millisecond)
	s, err := NewService("dps", cfg, time.Now, discard, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	url := "http://" + ln.Addr().String()
	s.SetInstances([]discovery.Instance{{ID: "a", Service: "dps", URL: url, Ready: true},
		{ID: "b", Service: "dps", URL: url, Ready: true}, {ID: "c", Service: "dps", URL: url, Ready: true}}, nil)
	lat := []time.Duration{3 * time.Millisecond, 5 * time.Millisecond, 40 * time.Millisecond, 9 * time.Millisecond}
	for i, id := range []string{"a", "b", "c"} {
		in := s.Lookup(id)
		for j := range 40 {
			s.Record(in, AttemptResult{Epoch: in.Epoch.Load(), Lat: lat[(i+j)%len(lat)], Outcome: OutcomeOK})
		}
	}
	if len(s.pool) != 3 {
		tb.Fatalf("pool of %d, want 3", len(s.pool))
	}
	i := 0
	return s, func() {
		in, err := s.Pick(nil)
		if err != nil {
			tb.Fatal(err)
		}
		s.Record(in, AttemptResult{Epoch: in.Epoch.Load(), Lat: lat[i%len(lat)], Outcome: OutcomeOK})
		i++
	}
}
