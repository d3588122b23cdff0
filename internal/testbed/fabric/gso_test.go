package fabric

import (
	"testing"
	"time"
)

// sendSuper has node from send a TCP super-packet of payload bytes cut at mss to node to, now.
func (sn *schedNet) sendSuper(from, to, payload, mss int) {
	b := superPacket(6, payload, mss, 0x10)
	copy(b[VnetHdrLen+16:VnetHdrLen+20], sn.ips[to].AsSlice())
	bp := sn.f.pools.get(len(b))
	n := copy(*bp, b)
	sn.f.mu.Lock()
	out := sn.f.ingress(nil, from, packet{bp: bp, n: n}, sn.now)
	sn.f.mu.Unlock()
	sn.record(out)
}

func TestSuperPacketCrossesADelayOnlyLinkWhole(t *testing.T) {
	sn := newSchedNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Delay: 5 * time.Millisecond}}})
	sn.sendSuper(0, 1, 14480, 1448)
	sn.advanceTo(sn.now + int64(time.Second))
	if len(sn.arrivals) != 1 {
		t.Fatalf("%d deliveries, want the super-packet whole", len(sn.arrivals))
	}
	st := sn.f.Stats()
	if got := st.Links[0].Packets; got != 10 {
		t.Errorf("link counted %d packets, want the 10 segments the wire would carry", got)
	}
}

func TestSuperPacketIsCutOnABandwidthLink(t *testing.T) {
	// 10 segments of 1488 bytes (IP) at 11.904 Mbit/s: 1 ms each, so they arrive 1 ms apart.
	sn := newSchedNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Bandwidth: 11_904_000}}})
	start := sn.now
	sn.sendSuper(0, 1, 14480, 1448)
	sn.advanceTo(sn.now + int64(time.Second))
	if len(sn.arrivals) != 10 {
		t.Fatalf("%d deliveries, want 10 segments", len(sn.arrivals))
	}
	for i, a := range sn.arrivals {
		if want := start + int64(i+1)*int64(time.Millisecond); a.at != want {
			t.Errorf("segment %d arrived at +%v, want +%v", i, time.Duration(a.at-start), time.Duration(want-start))
		}
	}
}

func TestSuperPacketLosesSegmentsNotTheWhole(t *testing.T) {
	sn := newSchedNet(t, 2, []Link{{A: 0, B: 1, Props: Props{Loss: 0.5}}})
	for range 20 {
		sn.sendSuper(0, 1, 14480, 1448)
	}
	sn.advanceTo(sn.now + int64(time.Second))
	lost := sn.f.Drops()[DropLoss]
	if got := uint64(len(sn.arrivals)) + lost; got != 200 {
		t.Fatalf("%d delivered + %d lost = %d, want 200 segments", len(sn.arrivals), lost, got)
	}
	if lost < 60 || lost > 140 {
		t.Fatalf("%d of 200 segments lost at 50%% loss", lost)
	}
}

func TestWriterCutsSuperPacketsForEndpointsWithoutOffloads(t *testing.T) {
	tn := newTestNet(t, 2, nil)
	b := superPacket(6, 4000, 1000, 0x10)
	bp := tn.f.pools.get(len(b))
	n := copy(*bp, b)
	tn.f.writeNow([]delivery{{node: tn.f.nodes[1], p: packet{bp: bp, n: n}}})
	got := tn.eps[1].arrivals()
	if len(got) != 4 {
		t.Fatalf("%d packets written, want 4 segments", len(got))
	}
	for i, a := range got {
		if len(a.pkt) > 1040 {
			t.Errorf("packet %d is %d bytes, more than a segment", i, len(a.pkt))
		}
	}
	if c := tn.f.NodeCounters(1); c.RxPackets != 4 {
		t.Errorf("node counted %d packets received, want 4", c.RxPackets)
	}
}
