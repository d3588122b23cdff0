package netbench

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestProbeAgainstReflectorOnLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Reserve a free port, then hand it to the reflector.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	errc := make(chan error, 1)
	go func() { errc <- Reflect(ctx, addr) }()
	var r *ProbeResult
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err = Probe(ctx, ProbeConfig{Target: addr, Rate: 2000, Duration: 500 * time.Millisecond, Size: 100, Linger: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.Received > 0 || time.Now().After(deadline) {
			break
		}
	}
	if r.Sent != 1000 {
		t.Errorf("sent %d packets, want 1000 (2000 pps x 0.5 s)", r.Sent)
	}
	if r.Loss > 0.01 {
		t.Errorf("loss %.3f on loopback", r.Loss)
	}
	if r.P50us <= 0 || r.P50us > r.P99us || r.P99us > r.MaxUs {
		t.Errorf("inconsistent percentiles: %+v", r)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("reflector: %v", err)
	}
}
