package fabric

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TUN is a layer-3 TUN device used as an Endpoint. The device exists as long as the file is open
// (it is not persistent), so a crashed fabric process leaves no interface behind.
type TUN struct {
	Name string
	file *os.File
}

// OpenTUN creates a TUN device named name (at most 15 bytes) in the calling thread's network
// namespace, without packet-information headers: reads and writes are bare IP packets.
func OpenTUN(name string) (*TUN, error) {
	if len(name) > unix.IFNAMSIZ-1 {
		return nil, fmt.Errorf("tun: interface name %q longer than %d bytes", name, unix.IFNAMSIZ-1)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tun: open /dev/net/tun: %w", err)
	}
	var req struct {
		name  [unix.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], name)
	req.flags = unix.IFF_TUN | unix.IFF_NO_PI
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req))); errno != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: TUNSETIFF %s: %w", name, errno)
	}
	// A non-blocking fd handed to os.NewFile is served by the runtime poller, so one goroutine
	// per device costs no OS thread and Close unblocks a pending Read.
	return &TUN{Name: name, file: os.NewFile(uintptr(fd), "/dev/net/tun:"+name)}, nil
}

func (t *TUN) Read(p []byte) (int, error)  { return t.file.Read(p) }
func (t *TUN) Write(p []byte) (int, error) { return t.file.Write(p) }
func (t *TUN) Close() error                { return t.file.Close() }
