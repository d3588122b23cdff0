package fabric

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// superPacket builds a segmentation-offload super-packet as a sender's stack hands it over: a
// virtio-net header with NEEDS_CSUM and the segment size, an IPv4 header, a TCP (proto 6) or UDP
// (17) header and payload bytes 0, 1, 2, ...
func superPacket(proto byte, payload, mss int, tcpFlags byte) []byte {
	l4 := 20
	gt := byte(gsoTCPv4)
	if proto == 17 {
		l4, gt = 8, gsoUDPL4
	}
	ip := make([]byte, 20+l4+payload)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	binary.BigEndian.PutUint16(ip[4:], 1000) // IP ID
	ip[8], ip[9] = 64, proto
	copy(ip[12:16], []byte{10, 77, 0, 1})
	copy(ip[16:20], []byte{10, 77, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip[:20]))
	binary.BigEndian.PutUint16(ip[20:], 40000)
	binary.BigEndian.PutUint16(ip[22:], 5201)
	if proto == 6 {
		binary.BigEndian.PutUint32(ip[24:], 0xfffff000) // sequence number close to wrapping
		ip[32] = 5 << 4
		ip[33] = tcpFlags
	}
	for i := range payload {
		ip[20+l4+i] = byte(i)
	}
	b := make([]byte, VnetHdrLen+len(ip))
	vnetHdr{flags: vnetNeedsCsum, gsoType: gt, hdrLen: uint16(20 + l4), gsoSize: uint16(mss), csumStart: 20,
		csumOffset: map[byte]uint16{6: 16, 17: 6}[proto]}.put(b)
	copy(b[VnetHdrLen:], ip)
	return b
}

// completeChecksum finishes a partial checksum as a NIC would: sum from csum_start to the end
// (the field holding the pseudo-header sum) and store the complement; then it verifies that the
// transport checksum over pseudo-header and segment is correct.
func checkTransportSum(t *testing.T, seg []byte) {
	t.Helper()
	h := readVnetHdr(seg)
	ip := seg[VnetHdrLen:]
	if h.flags&vnetNeedsCsum == 0 || h.gsoType != gsoNone {
		t.Fatalf("segment header %+v: want NEEDS_CSUM and no GSO", h)
	}
	l4 := ip[h.csumStart:]
	var sum uint32
	for i := 0; i+1 < len(l4); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(l4[i:]))
	}
	if len(l4)%2 == 1 {
		sum += uint32(l4[len(l4)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	full := append([]byte(nil), ip...)
	binary.BigEndian.PutUint16(full[int(h.csumStart)+int(h.csumOffset):], ^uint16(sum))
	// Verify as a receiver: pseudo-header + transport segment with its checksum sums to 0xffff.
	l4 = full[h.csumStart:]
	var v uint32
	for i := 12; i < 20; i += 2 {
		v += uint32(binary.BigEndian.Uint16(full[i:]))
	}
	v += uint32(full[9]) + uint32(len(l4))
	for i := 0; i+1 < len(l4); i += 2 {
		v += uint32(binary.BigEndian.Uint16(l4[i:]))
	}
	if len(l4)%2 == 1 {
		v += uint32(l4[len(l4)-1]) << 8
	}
	for v > 0xffff {
		v = v&0xffff + v>>16
	}
	if v != 0xffff {
		t.Fatalf("transport checksum does not verify (sum %#x)", v)
	}
}

func TestSegmentTCP(t *testing.T) {
	const payload, mss = 10000, 1448
	pools := newBufPools(1500)
	in := superPacket(6, payload, mss, 0x18|0x01|0x80) // PSH ACK FIN CWR
	if got := segments(in); got != 7 {
		t.Fatalf("segments = %d, want 7", got)
	}
	segs, ok := segment(in, pools, nil)
	if !ok || len(segs) != 7 {
		t.Fatalf("segment: ok %v, %d segments, want 7", ok, len(segs))
	}
	var data []byte
	for i, s := range segs {
		ip := s.ip()
		if ipChecksum(ip[:20]) != 0 {
			t.Errorf("segment %d: IP header checksum does not verify", i)
		}
		if tl := int(binary.BigEndian.Uint16(ip[2:])); tl != len(ip) {
			t.Errorf("segment %d: total length %d, packet is %d", i, tl, len(ip))
		}
		if id := binary.BigEndian.Uint16(ip[4:]); id != 1000+uint16(i) {
			t.Errorf("segment %d: IP ID %d, want %d", i, id, 1000+i)
		}
		if seq := binary.BigEndian.Uint32(ip[24:]); seq != 0xfffff000+uint32(i*mss) {
			t.Errorf("segment %d: seq %#x, want %#x", i, seq, 0xfffff000+uint32(i*mss))
		}
		flags := ip[33]
		last := i == len(segs)-1
		if (flags&0x01 != 0) != last || (flags&0x08 != 0) != last {
			t.Errorf("segment %d: flags %#x: FIN and PSH belong to the last segment only", i, flags)
		}
		if (flags&0x80 != 0) != (i == 0) {
			t.Errorf("segment %d: flags %#x: CWR belongs to the first segment only", i, flags)
		}
		if flags&0x10 == 0 {
			t.Errorf("segment %d: ACK lost", i)
		}
		if !last && len(ip)-40 != mss {
			t.Errorf("segment %d: %d payload bytes, want %d", i, len(ip)-40, mss)
		}
		checkTransportSum(t, s.bytes())
		data = append(data, ip[40:]...)
		pools.put(s.bp)
	}
	if !bytes.Equal(data, in[VnetHdrLen+40:]) {
		t.Fatal("segments' payloads do not add up to the super-packet's")
	}
}

func TestSegmentUDP(t *testing.T) {
	const payload, mss = 3000, 1200
	in := superPacket(17, payload, mss, 0)
	segs, ok := segment(in, newBufPools(1500), nil)
	if !ok || len(segs) != 3 {
		t.Fatalf("segment: ok %v, %d segments, want 3", ok, len(segs))
	}
	var data []byte
	for i, s := range segs {
		ip := s.ip()
		if ul := int(binary.BigEndian.Uint16(ip[24:])); ul != len(ip)-20 {
			t.Errorf("segment %d: UDP length %d, want %d", i, ul, len(ip)-20)
		}
		checkTransportSum(t, s.bytes())
		data = append(data, ip[28:]...)
	}
	if !bytes.Equal(data, in[VnetHdrLen+28:]) {
		t.Fatal("segments' payloads do not add up")
	}
}

func TestSegmentRefusesWhatItCannotCut(t *testing.T) {
	good := superPacket(6, 3000, 1000, 0x10)
	for name, mutate := range map[string]func(b []byte){
		"not a super-packet":    func(b []byte) { b[1] = gsoNone },
		"segment size zero":     func(b []byte) { binary.LittleEndian.PutUint16(b[4:], 0) },
		"UDP claimed as TCP":    func(b []byte) { b[VnetHdrLen+9] = 17 },
		"IPv6":                  func(b []byte) { b[VnetHdrLen] = 0x60 },
		"segment size under 64": func(b []byte) { binary.LittleEndian.PutUint16(b[4:], 8) },
	} {
		b := append([]byte(nil), good...)
		mutate(b)
		if segs, ok := segment(b, newBufPools(1500), nil); ok {
			t.Errorf("%s: cut into %d segments, want refused", name, len(segs))
		}
	}
	// A TCP header (with options) longer than the packet.
	b := superPacket(6, 10, 100, 0x10)
	b[VnetHdrLen+32] = 15 << 4
	if segs, ok := segment(b, newBufPools(1500), nil); ok {
		t.Errorf("TCP header longer than the packet: cut into %d segments, want refused", len(segs))
	}
}

// FuzzSegment feeds arbitrary headers and packets (what a node may send) to the cutter: it must
// never panic, and what it produces must fit its buffers and add up to the input's payload.
func FuzzSegment(f *testing.F) {
	f.Add(superPacket(6, 5000, 1448, 0x18))
	f.Add(superPacket(17, 4000, 1000, 0))
	f.Add(superPacket(6, 100, 64, 0x10))
	pools := newBufPools(1500)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < VnetHdrLen || len(b) > largeBuf {
			return
		}
		_ = segments(b)
		segs, ok := segment(b, pools, nil)
		if !ok {
			return
		}
		hl := l4HeaderEnd(b[VnetHdrLen:], readVnetHdr(b).gsoType&^gsoECN)
		total := 0
		for _, s := range segs {
			if s.n > cap(*s.bp) {
				t.Fatalf("segment of %d bytes in a %d-byte buffer", s.n, cap(*s.bp))
			}
			total += s.n - VnetHdrLen - hl
			pools.put(s.bp)
		}
		if total != len(b)-VnetHdrLen-hl {
			t.Fatalf("segments carry %d payload bytes, input %d", total, len(b)-VnetHdrLen-hl)
		}
	})
}
