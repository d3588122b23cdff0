package testbed

import (
	"maps"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// vethDrops counts the packets the kernel dropped on the nodes' veth pairs, which the fabric's
// own counters cannot see: a packet a node sent that never reached the fabric's socket (the
// host end's receive backlog was full: the node's eth0 counts it as a transmit drop), and one
// the fabric wrote that never reached the node (the host end counts it). Both mean the host
// could not keep up, not that the emulated network lost them.
func (tb *Testbed) vethDrops() (toNodes, fromNodes uint64) {
	for _, n := range tb.nodes {
		if l, err := netlink.LinkByName(n.tun); err == nil && l.Attrs().Statistics != nil {
			toNodes += l.Attrs().Statistics.TxDropped
		}
		h, err := tb.nodeNetlink(n)
		if err != nil {
			continue
		}
		if l, err := h.LinkByName("eth0"); err == nil && l.Attrs().Statistics != nil {
			fromNodes += l.Attrs().Statistics.TxDropped
		}
	}
	return toNodes, fromNodes
}

// nodeNetlink is a netlink handle in node n's namespace, opened on first use and closed by Down.
func (tb *Testbed) nodeNetlink(n *node) (*netlink.Handle, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if n.nl != nil {
		return n.nl, nil
	}
	ns, err := netns.GetFromName(n.ns)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, err
	}
	n.nl = h
	return h, nil
}

// closeNetlink closes the nodes' netlink handles.
func (tb *Testbed) closeNetlink() {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, n := range tb.nodes {
		if n.nl != nil {
			n.nl.Close()
			n.nl = nil
		}
	}
}

// withVethDrops adds the veth pairs' drops to the fabric's read and write drops.
func (tb *Testbed) withVethDrops(drops map[string]uint64) map[string]uint64 {
	out := maps.Clone(drops)
	to, from := tb.vethDrops()
	out[fabric.DropWrite] += to
	out[fabric.DropRead] += from
	return out
}
