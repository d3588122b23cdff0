package fabric

import (
	"encoding/binary"
	"sync"
)

// A packet inside the fabric is a buffer holding a virtio-net header (VnetHdrLen bytes, the
// layout Linux uses for TUN and packet sockets) followed by the IPv4 packet. The header carries
// the sender's offload state: a checksum still to be completed (the receiver's kernel accepts it
// as such, as it does from a NIC) and, for a segmentation-offload super-packet, the segment size
// the wire would have cut it into.
const VnetHdrLen = 10

const (
	vnetNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM

	gsoNone  = 0 // VIRTIO_NET_HDR_GSO_NONE
	gsoTCPv4 = 1 // VIRTIO_NET_HDR_GSO_TCPV4
	gsoUDPL4 = 5 // VIRTIO_NET_HDR_GSO_UDP_L4
	gsoECN   = 0x80
)

// vnetHdr is the decoded header.
type vnetHdr struct {
	flags, gsoType                         uint8
	hdrLen, gsoSize, csumStart, csumOffset uint16
}

func readVnetHdr(b []byte) vnetHdr {
	return vnetHdr{flags: b[0], gsoType: b[1], hdrLen: binary.LittleEndian.Uint16(b[2:]),
		gsoSize: binary.LittleEndian.Uint16(b[4:]), csumStart: binary.LittleEndian.Uint16(b[6:]),
		csumOffset: binary.LittleEndian.Uint16(b[8:])}
}

func (h vnetHdr) put(b []byte) {
	b[0], b[1] = h.flags, h.gsoType
	binary.LittleEndian.PutUint16(b[2:], h.hdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.gsoSize)
	binary.LittleEndian.PutUint16(b[6:], h.csumStart)
	binary.LittleEndian.PutUint16(b[8:], h.csumOffset)
}

// packet is a buffer from the pools and the length used: header and IPv4 packet.
type packet struct {
	bp *[]byte
	n  int
}

func (p packet) bytes() []byte { return (*p.bp)[:p.n] }

// ip is the IPv4 packet after the header.
func (p packet) ip() []byte { return (*p.bp)[VnetHdrLen:p.n] }

// isGSO reports whether the packet in buf (header first) is a super-packet.
func isGSO(buf []byte) bool { return buf[1]&^gsoECN != gsoNone }

// Buffer sizes: a packet up to the MTU fits a small buffer; super-packets (up to 64 KiB of IP)
// get a large one. Keeping the two apart bounds the memory that packets in flight on a long link
// hold.
const largeBuf = VnetHdrLen + 65535

type bufPools struct {
	smallSize    int // the MTU and the header, at least 2 KiB
	small, large sync.Pool
}

func newBufPools(mtu int) *bufPools {
	p := &bufPools{smallSize: min(max(2048, VnetHdrLen+mtu), largeBuf-1)}
	p.small.New = func() any { b := make([]byte, p.smallSize); return &b }
	p.large.New = func() any { b := make([]byte, largeBuf); return &b }
	return p
}

func (p *bufPools) get(n int) *[]byte {
	if n <= p.smallSize {
		return p.small.Get().(*[]byte)
	}
	return p.large.Get().(*[]byte)
}

func (p *bufPools) put(b *[]byte) {
	switch cap(*b) {
	case p.smallSize:
		p.small.Put(b)
	case largeBuf:
		p.large.Put(b)
	}
}

// segments is the number of wire packets a packet stands for: 1, or a super-packet's segment
// count.
func segments(buf []byte) int {
	if !isGSO(buf) {
		return 1
	}
	h := readVnetHdr(buf)
	ip := buf[VnetHdrLen:]
	hl := l4HeaderEnd(ip, h.gsoType&^gsoECN)
	if hl <= 0 || h.gsoSize == 0 || hl >= len(ip) {
		return 1
	}
	return (len(ip) - hl + int(h.gsoSize) - 1) / int(h.gsoSize)
}

// l4HeaderEnd is the length of the IPv4 and TCP/UDP headers of ip for a super-packet of gsoType,
// or -1 when the packet is not what the type says.
func l4HeaderEnd(ip []byte, gsoType uint8) int {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return -1
	}
	ihl := int(ip[0]&0x0f) * 4
	switch gsoType {
	case gsoTCPv4:
		if ip[9] != 6 || len(ip) < ihl+20 {
			return -1
		}
		thl := int(ip[ihl+12]>>4) * 4
		if thl < 20 || len(ip) < ihl+thl {
			return -1
		}
		return ihl + thl
	case gsoUDPL4:
		if ip[9] != 17 || len(ip) < ihl+8 {
			return -1
		}
		return ihl + 8
	}
	return -1
}

const minSegment = 64

// segment cuts the super-packet in buf (header first) into the packets the wire would carry, as
// the kernel's software segmentation does: headers copied, IPv4 total length, ID and header
// checksum per segment, TCP sequence numbers advanced and FIN/PSH kept for the last segment (CWR
// for the first), UDP lengths set. Each segment's transport checksum is left for the receiver to
// complete (NEEDS_CSUM with the pseudo-header sum in place), as the sender's offload left it. The
// segments are appended to out in buffers from pools; ok is false when buf is not a super-packet
// this can cut (it is then left alone).
func segment(buf []byte, pools *bufPools, out []packet) (_ []packet, ok bool) {
	h := readVnetHdr(buf)
	gt := h.gsoType &^ gsoECN
	ip := buf[VnetHdrLen:]
	hl := l4HeaderEnd(ip, gt)
	mss := int(h.gsoSize)
	// No stack sends segments this small (Linux's smallest MSS is 88); refusing them bounds the
	// work one packet can cause at 1024 segments.
	if hl < 0 || mss < minSegment || hl >= len(ip) {
		return out, false
	}
	ihl := int(ip[0]&0x0f) * 4
	payload := ip[hl:]
	id0 := binary.BigEndian.Uint16(ip[4:])
	var seq0 uint32
	var flags0 byte
	if gt == gsoTCPv4 {
		seq0 = binary.BigEndian.Uint32(ip[ihl+4:])
		flags0 = ip[ihl+13]
	}
	seg := vnetHdr{flags: vnetNeedsCsum, gsoType: gsoNone, csumStart: uint16(ihl)}
	if gt == gsoTCPv4 {
		seg.csumOffset = 16
	} else {
		seg.csumOffset = 6
	}
	for i, off := 0, 0; off < len(payload); i, off = i+1, off+mss {
		chunk := payload[off:min(off+mss, len(payload))]
		n := VnetHdrLen + hl + len(chunk)
		bp := pools.get(n)
		b := (*bp)[:n]
		seg.put(b)
		s := b[VnetHdrLen:]
		copy(s, ip[:hl])
		copy(s[hl:], chunk)
		binary.BigEndian.PutUint16(s[2:], uint16(hl+len(chunk)))
		binary.BigEndian.PutUint16(s[4:], id0+uint16(i))
		s[10], s[11] = 0, 0
		binary.BigEndian.PutUint16(s[10:], ipChecksum(s[:ihl]))
		l4len := len(s) - ihl
		if gt == gsoTCPv4 {
			binary.BigEndian.PutUint32(s[ihl+4:], seq0+uint32(off))
			fl := flags0
			if off+mss < len(payload) {
				fl &^= 0x01 | 0x08 // FIN, PSH only on the last segment
			}
			if i > 0 {
				fl &^= 0x80 // CWR only on the first
			}
			s[ihl+13] = fl
			binary.BigEndian.PutUint16(s[ihl+16:], pseudoSum(s, 6, l4len))
		} else {
			binary.BigEndian.PutUint16(s[ihl+4:], uint16(l4len))
			binary.BigEndian.PutUint16(s[ihl+6:], pseudoSum(s, 17, l4len))
		}
		out = append(out, packet{bp: bp, n: n})
	}
	return out, true
}

// ipChecksum is the Internet checksum of an IPv4 header (its checksum field zeroed).
func ipChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// pseudoSum is the folded (not complemented) pseudo-header sum a partial checksum starts from:
// what the sender's stack leaves in the checksum field for the device to complete.
func pseudoSum(ip []byte, proto byte, l4len int) uint16 {
	var sum uint32
	for i := 12; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	sum += uint32(proto) + uint32(l4len)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
