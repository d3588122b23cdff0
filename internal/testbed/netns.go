package testbed

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// runIP runs iproute2's ip with args and returns its combined output in the error.
func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsExists reports whether a named namespace (/run/netns/NAME) exists.
func netnsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// inNetns runs fn on an OS thread switched into the named namespace (a name under /run/netns, or
// an absolute path such as /proc/<pid>/ns/net). Sockets and /proc/sys files
// opened by fn stay in that namespace after the thread switches back. If switching back fails
// the thread is left locked, so the runtime discards it instead of reusing a thread in the wrong
// namespace.
func inNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("netns: current namespace: %w", err)
			return
		}
		defer orig.Close()
		var target netns.NsHandle
		if filepath.IsAbs(name) {
			target, err = netns.GetFromPath(name)
		} else {
			target, err = netns.GetFromName(name)
		}
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: enter: %w", name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("netns %s: leave: %w", name, err) // thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// dialInNetns opens a connection from inside the named namespace.
func dialInNetns(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	// Only the socket() call has to happen inside the namespace; connect may block, so the
	// dial runs in the namespace-switched goroutine with the caller's context.
	var conn net.Conn
	err := inNetns(ns, func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		conn = c
		return err
	})
	return conn, err
}

// nodeMAC is node addr's Ethernet address on its eth0: locally administered, derived from the
// address, so the fabric knows where to send without ARP.
func nodeMAC(addr net.IP) net.HardwareAddr {
	a := addr.To4()
	return net.HardwareAddr{0x02, 0xc7, a[0], a[1], a[2], a[3]}
}

// setupNode creates namespace ns with loopback up and IPv6 off (the fabric carries IPv4 only;
// disabling v6 keeps router solicitations off the emulated links), and a veth pair: eth0 in the
// node with addr, and hostEnd in the calling namespace, which the fabric reads and writes.
//
// eth0 does not use ARP: every IPv4 packet leaves with the node's own MAC as destination, which
// the host end's stack discards at once as not its own (the fabric's packet socket has seen it
// by then), and the fabric addresses what it delivers to nodeMAC.
func setupNode(ns, hostEnd string, addr *net.IPNet, mtu int) error {
	if err := runIP("netns", "add", ns); err != nil {
		return err
	}
	err := inNetns(ns, func() error {
		for _, k := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0o644); err != nil {
				return fmt.Errorf("disable ipv6: %w", err)
			}
		}
		// Let unprivileged processes in the node ping (iputils uses ICMP datagram sockets).
		return os.WriteFile("/proc/sys/net/ipv4/ping_group_range", []byte("0 2147483647"), 0o644)
	})
	if err != nil {
		return fmt.Errorf("node namespace %s: %w", ns, err)
	}
	h, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer h.Close()
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: hostEnd, MTU: mtu},
		PeerName:         "eth0",
		PeerHardwareAddr: nodeMAC(addr.IP),
		PeerNamespace:    netlink.NsFd(int(h)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth %s/%s:eth0: %w", hostEnd, ns, err)
	}
	// The host end carries no addresses; IPv6 off keeps the host's own autoconfiguration traffic
	// off the node.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+hostEnd+"/disable_ipv6", []byte("1"), 0o644)
	he, err := netlink.LinkByName(hostEnd)
	if err != nil {
		return fmt.Errorf("find %s: %w", hostEnd, err)
	}
	if err := netlink.LinkSetUp(he); err != nil {
		return fmt.Errorf("%s up: %w", hostEnd, err)
	}
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", ns, err)
	}
	defer nh.Close()
	lo, err := nh.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: lo: %w", ns, err)
	}
	if err := nh.LinkSetUp(lo); err != nil {
		return fmt.Errorf("%s: lo up: %w", ns, err)
	}
	l, err := nh.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("%s: eth0: %w", ns, err)
	}
	if err := nh.LinkSetARPOff(l); err != nil {
		return fmt.Errorf("%s: eth0 arp off: %w", ns, err)
	}
	if err := nh.AddrAdd(l, &netlink.Addr{IPNet: addr}); err != nil {
		return fmt.Errorf("%s: address %v: %w", ns, addr, err)
	}
	if err := nh.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: eth0 up: %w", ns, err)
	}
	return nil
}

// routeOut routes prefixes (networks behind other nodes) out of namespace ns's eth0. eth0 does
// not use ARP, so the packets leave as every packet of the node does, and the fabric carries
// them to the node behind which the prefix is.
func routeOut(ns string, prefixes []netip.Prefix) error {
	if len(prefixes) == 0 {
		return nil
	}
	h, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", ns, err)
	}
	defer nh.Close()
	l, err := nh.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("%s: eth0: %w", ns, err)
	}
	for _, p := range prefixes {
		dst := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
		if err := nh.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("%s: route %v via eth0: %w", ns, p, err)
		}
	}
	return nil
}

// writeHosts makes node names resolve inside the namespace: `ip netns exec` bind-mounts
// /etc/netns/NS/hosts over /etc/hosts for the processes it starts.
func writeHosts(ns string, names []string, addrs map[string]string) error {
	dir := "/etc/netns/" + ns
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# written by continuum testbed; removed with the testbed\n")
	fmt.Fprintf(&b, "127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s\t%s\n", addrs[n], n)
	}
	return os.WriteFile(dir+"/hosts", []byte(b.String()), 0o644)
}

// deleteNetns removes the namespace and its /etc/netns directory; missing ones are not errors.
func deleteNetns(ns string) error {
	var err error
	if netnsExists(ns) {
		err = runIP("netns", "del", ns)
	}
	if rerr := os.RemoveAll("/etc/netns/" + ns); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// DialIn opens a connection from inside a network namespace: a node's (NodeStatus.Netns), as Dial
// does for the testbed's own nodes, or any process's (/proc/<pid>/ns/net): for a process on this
// host that does not host the testbed (a runner reaching what runs in a node without crossing
// the emulated links).
func DialIn(ctx context.Context, netns, network, addr string) (net.Conn, error) {
	return dialInNetns(ctx, netns, network, addr)
}

// Dial opens a connection from inside node (for readiness checks and run-time control of
// components; data-path traffic belongs to processes started in the node).
func (tb *Testbed) Dial(ctx context.Context, node, network, addr string) (net.Conn, error) {
	n, err := tb.node(node)
	if err != nil {
		return nil, err
	}
	return dialInNetns(ctx, n.ns, network, addr)
}

// InNode runs fn on an OS thread in node's network namespace (and only there: the goroutines fn
// starts do not inherit it). Sockets, netlink handles and /proc/sys/net files fn opens belong to
// the node: for setting up what lives in a node beside its eth0 (a Kubernetes node's pod bridge
// and forwarding).
func (tb *Testbed) InNode(node string, fn func() error) error {
	n, err := tb.node(node)
	if err != nil {
		return err
	}
	return inNetns(n.ns, fn)
}
