package fabric

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AFPacket is a BatchEndpoint on one end of a veth pair (the fabric's end; the other end is the
// node's eth0): an AF_PACKET datagram socket that receives the IPv4 packets the node sends and
// transmits packets to the node's MAC address.
//
// Why not a TUN device: a TUN fd moves one packet per read(2) or write(2), and on the VMs this
// project runs on a system call costs microseconds, which capped the fabric near 20k packets/s
// with its delays intact. A packet socket takes and gives batches (recvmmsg/sendmmsg, one call for
// up to Batch packets), and with PACKET_VNET_HDR it carries the kernel's segmentation offload
// metadata, so a TCP flow crosses the fabric as 64 KiB super-packets instead of 1500-byte ones.
//
// Every packet read carries the kernel's receive timestamp (SO_TIMESTAMPNS), taken when the node
// sent it: the fabric schedules from that time, so a reader that runs late does not add its lag
// to the emulated delay, and the lag is measured.
type AFPacket struct {
	Name   string
	fd     int
	to     unix.RawSockaddrLinklayer // the node's eth0, for sendmmsg
	closed atomic.Bool
	// mu is held (read) around every system call on fd and (write) by Close, so the fd number is
	// never closed, and perhaps reused by another open, under a call still to be made.
	mu    sync.RWMutex
	drops atomic.Uint64

	eth [ethLen]byte // the Ethernet header of every packet sent: to the node, from the host end

	// Reader state (one reader goroutine at a time). Each message is gathered into three parts:
	// the virtio-net header into the packet buffer, the Ethernet header into rdrop, the IPv4
	// packet into the buffer after the virtio-net header, so the fabric's layout needs no copy.
	rmsgs []unix.Mmsghdr
	riov  []unix.Iovec
	rctl  []byte
	rdrop []byte
	// Writer scratch, guarded by the caller (the fabric writes to a node from one thread at a time).
	wmsgs []unix.Mmsghdr
	wiov  []unix.Iovec
}

// ethLen is the Ethernet header's length. A raw packet socket (the only kind that carries the
// virtio-net header) sees it; offsets in the header count from it.
const ethLen = 14

// Batch is the most packets one ReadBatch or WriteBatch system call moves.
const Batch = 64

const ctlSize = 64 // room for one SCM_TIMESTAMPNS control message

// OpenAFPacket binds a packet socket to the interface named ifname in the calling thread's
// network namespace; packets written go to the Ethernet address dst (the node's eth0).
func OpenAFPacket(ifname string, dst net.HardwareAddr) (*AFPacket, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afpacket: %s: %w", ifname, err)
	}
	if len(dst) != 6 {
		return nil, fmt.Errorf("afpacket: %s: destination %v is not an Ethernet address", ifname, dst)
	}
	proto := htons(unix.ETH_P_IP)
	// Protocol 0 until bind: a packet socket opened for ETH_P_IP receives from every interface
	// of the namespace (loopback included) until bind narrows it to one, and what arrived in
	// between would stay queued and reach the fabric as packets from the node.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("afpacket: socket: %w", err)
	}
	fail := func(what string, err error) (*AFPacket, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("afpacket: %s: %s: %w", ifname, what, err)
	}
	for _, o := range []struct {
		level, opt, val int
		name            string
	}{
		{unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1, "PACKET_VNET_HDR"},
		// The fabric's own transmissions on this interface must not come back as input.
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING"},
		// veth has no queue to respect; going straight to its transmit saves the qdisc layer.
		{unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS"},
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS"},
		// Room for bursts while the reader is not scheduled (the default is ~200 KiB).
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32 << 20, "SO_RCVBUFFORCE"},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8 << 20, "SO_SNDBUFFORCE"},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.val); err != nil {
			return fail(o.name, err)
		}
	}
	// Reads block on the reader's own thread; the timeout lets Close stop it.
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	a := &AFPacket{Name: ifname, fd: fd}
	a.to.Family = unix.AF_PACKET
	a.to.Protocol = proto
	a.to.Ifindex = int32(ifi.Index)
	a.to.Halen = 6
	copy(a.to.Addr[:], dst)
	copy(a.eth[0:6], dst)
	copy(a.eth[6:12], ifi.HardwareAddr)
	binary.BigEndian.PutUint16(a.eth[12:], unix.ETH_P_IP)
	return a, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// fromFrame makes the offsets of a virtio-net header read from the raw socket count from the IP
// header, as the fabric's do; toFrame makes them count from the Ethernet header again. A write
// goes out once, so converting the buffer in place is safe.
func fromFrame(b []byte) { shiftHdr(b, -ethLen) }
func toFrame(b []byte)   { shiftHdr(b, ethLen) }

func shiftHdr(b []byte, by int) {
	h := readVnetHdr(b)
	if h.flags&vnetNeedsCsum != 0 {
		h.csumStart = uint16(int(h.csumStart) + by)
	}
	if h.hdrLen != 0 {
		h.hdrLen = uint16(max(int(h.hdrLen)+by, 0))
	}
	h.put(b)
}

// ReadBatch implements BatchEndpoint: it blocks until a packet arrives (or Close), then returns
// what is queued, up to len(bufs).
func (a *AFPacket) ReadBatch(bufs [][]byte, sizes []int, stamps []int64) (int, error) {
	return a.recv(bufs, sizes, stamps, unix.MSG_WAITFORONE)
}

// pollFD and readNow make AFPacket pollable: the fabric's poller waits for the socket in epoll
// and reads what is queued without blocking.
func (a *AFPacket) pollFD() int { return a.fd }

func (a *AFPacket) readNow(bufs [][]byte, sizes []int, stamps []int64) (int, error) {
	n, err := a.recv(bufs, sizes, stamps, unix.MSG_DONTWAIT)
	if err == errAgain {
		return 0, nil
	}
	return n, err
}

var errAgain = errors.New("nothing queued")

// recv is one recvmmsg with flags: MSG_WAITFORONE blocks for the first packet (retrying on
// the receive timeout, which only serves Close); MSG_DONTWAIT returns errAgain when nothing is
// queued.
func (a *AFPacket) recv(bufs [][]byte, sizes []int, stamps []int64, flags int) (int, error) {
	n := min(len(bufs), Batch)
	if a.rmsgs == nil {
		a.rmsgs = make([]unix.Mmsghdr, Batch)
		a.riov = make([]unix.Iovec, 3*Batch)
		a.rctl = make([]byte, Batch*ctlSize)
		a.rdrop = make([]byte, Batch*ethLen)
	}
	for i := range n {
		iov := a.riov[3*i : 3*i+3]
		iov[0].Base = &bufs[i][0]
		iov[0].SetLen(VnetHdrLen)
		iov[1].Base = &a.rdrop[i*ethLen]
		iov[1].SetLen(ethLen)
		iov[2].Base = &bufs[i][VnetHdrLen]
		iov[2].SetLen(len(bufs[i]) - VnetHdrLen)
		h := &a.rmsgs[i].Hdr
		*h = unix.Msghdr{Iov: &iov[0], Iovlen: 3, Control: &a.rctl[i*ctlSize]}
		h.SetControllen(ctlSize)
	}
	for {
		a.mu.RLock()
		if a.closed.Load() {
			a.mu.RUnlock()
			return 0, errClosed
		}
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(a.fd), uintptr(unsafe.Pointer(&a.rmsgs[0])),
			uintptr(n), uintptr(flags), 0, 0)
		a.mu.RUnlock()
		switch errno {
		case 0:
		case unix.EAGAIN:
			if flags&unix.MSG_DONTWAIT != 0 {
				return 0, errAgain
			}
			continue
		case unix.EINTR:
			continue
		default:
			return 0, fmt.Errorf("afpacket: %s: recvmmsg: %w", a.Name, errno)
		}
		got := int(r)
		for i := range got {
			sizes[i] = int(a.rmsgs[i].Len) - ethLen
			stamps[i] = a.stamp(i)
			fromFrame(bufs[i])
		}
		return got, nil
	}
}

// stamp extracts message i's SCM_TIMESTAMPNS (CLOCK_REALTIME ns), 0 if it has none.
func (a *AFPacket) stamp(i int) int64 {
	h := &a.rmsgs[i].Hdr
	ctl := a.rctl[i*ctlSize : i*ctlSize+int(h.Controllen)]
	for len(ctl) >= unix.SizeofCmsghdr {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		if c.Len < unix.SizeofCmsghdr || int(c.Len) > len(ctl) {
			return 0
		}
		if c.Level == unix.SOL_SOCKET && c.Type == unix.SCM_TIMESTAMPNS && int(c.Len) >= unix.SizeofCmsghdr+16 {
			d := ctl[unix.SizeofCmsghdr:]
			return int64(binary.NativeEndian.Uint64(d[0:8]))*1e9 + int64(binary.NativeEndian.Uint64(d[8:16]))
		}
		ctl = ctl[cmsgAlign(int(c.Len)):]
	}
	return 0
}

func cmsgAlign(n int) int { return (n + 7) &^ 7 }

// WriteBatch implements BatchEndpoint: every packet (virtio-net header first) goes to the node.
// A packet the kernel refuses is counted as failed, not retried: the fabric reports it.
func (a *AFPacket) WriteBatch(pkts [][]byte) (int, error) {
	if a.wmsgs == nil {
		a.wmsgs = make([]unix.Mmsghdr, Batch)
		a.wiov = make([]unix.Iovec, 3*Batch)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed.Load() {
		return 0, errClosed
	}
	sent := 0
	for len(pkts) > 0 {
		n := min(len(pkts), Batch)
		for i := range n {
			p := pkts[i]
			toFrame(p)
			iov := a.wiov[3*i : 3*i+3]
			iov[0].Base = &p[0]
			iov[0].SetLen(VnetHdrLen)
			iov[1].Base = &a.eth[0]
			iov[1].SetLen(ethLen)
			iov[2].Base = &p[VnetHdrLen]
			iov[2].SetLen(len(p) - VnetHdrLen)
			a.wmsgs[i].Hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&a.to)), Namelen: unix.SizeofSockaddrLinklayer,
				Iov: &iov[0], Iovlen: 3}
		}
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(a.fd), uintptr(unsafe.Pointer(&a.wmsgs[0])), uintptr(n), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			// The first packet failed (e.g. ENOBUFS); skip it and go on with the rest.
			pkts = pkts[1:]
			continue
		}
		sent += int(r)
		if int(r) < n {
			pkts = pkts[int(r)+1:] // packet r was refused
			continue
		}
		pkts = pkts[n:]
	}
	return sent, nil
}

// Drops is how many packets the socket dropped because its receive buffer was full, since it
// was opened: packets the node sent that the fabric never saw.
func (a *AFPacket) Drops() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.closed.Load() {
		// The kernel resets its counters on every read: accumulate.
		if st, err := unix.GetsockoptTpacketStats(a.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			a.drops.Add(uint64(st.Drops))
		}
	}
	return a.drops.Load()
}

// Close stops a blocked ReadBatch (within the receive timeout, 100 ms) and closes the socket.
func (a *AFPacket) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return unix.Close(a.fd)
}

var errClosed = errors.New("endpoint closed")

// Offloads implements BatchEndpoint: veth takes super-packets and hands them to the node's stack
// whole, as a NIC's receive offload would.
func (a *AFPacket) Offloads() bool { return true }
