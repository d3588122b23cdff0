// Package fabric is the userspace network that connects the testbed's nodes: every node's
// emulated interface is an endpoint (AFPacket: a packet socket on the host end of the veth pair
// whose other end is the node's eth0), and the fabric moves IPv4 packets between endpoints along
// the topology's links, applying each link's delay, jitter, loss, bandwidth and queue limit hop by
// hop, and dropping what partitions cut. It measures itself (Stats): per-link traffic and drops,
// how late it delivered, and its own CPU, so a run can tell when the fabric was the limit.
//
// It exists because the kernels this project runs on have no sch_netem; doing the emulation in
// one process also lets a multi-hop path share per-link bandwidth and makes partitions, reroutes and
// counters exact. It knows nothing of namespaces, cgroups or processes (package testbed does).
//
// Timing model: a packet read from node A at time t is scheduled through the first link of its
// route: it waits for the link's transmitter (bandwidth), is serialised, then propagates for
// delay±jitter, and arrives at the next node, where the same happens on the next link. Arrivals
// are events in one heap served by the poller, one OS thread that waits in epoll for the nodes'
// sockets and a timerfd together (hrtimer precision, no timer slack), so a late wake-up never
// accumulates across hops: every hop is computed from the scheduled, not the observed, time. A packet's first hop starts at the kernel's stamp of when the
// node sent it, so the reader's own lag is not added either. Within one link direction packets
// never overtake each other (FIFO, like a wire); jitter therefore delays but does not reorder.
package fabric
