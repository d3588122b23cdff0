// Package freeport hands out loopback TCP ports for servers started next: a child process told
// its --listen address, or several ports a cluster's members must know before any starts.
//
// The usual way, listen on :0, read the port, close, hand it on, races: between the close and
// the server's bind, the kernel may give the same port to any process as the source port of an
// outgoing connection or to another bind(:0), and with test packages running side by side it
// does (a CI run failed with "bind: address already in use" that way). This package takes ports
// from below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), which the
// kernel never gives out by itself (and from below Kubernetes' NodePort range), so the only
// other takers are processes asking for that exact port. Processes that use this package split that space into blocks: a process owns a block
// while it holds a listener on the block's first port (the kernel keeps two processes from
// holding it, and frees it when the owner exits, even by a crash), and hands out the block's
// other ports, each once, checking first that nothing else (a leftover child of a dead process)
// listens there.
//
// Where the ephemeral range starts too low to leave room, it falls back to the kernel's choice.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

const (
	// Blocks are taken from [lowest, highest), capped at the ephemeral range's start: above
	// the fixed ports of the systems we start (etcd 2379/2380, Redis 6379, Kafka 9092/9093, the
	// kubelet 10248/10250, kube-proxy 10249/10256, the controller manager 10257, the scheduler
	// 10259) and below Kubernetes' NodePort range (30000-32767), where kube-proxy serves.
	lowest    = 20000
	highest   = 30000
	blockSize = 32
	// minBlocks: fewer blocks than this below the ephemeral range and the package uses :0.
	minBlocks = 16
)

var (
	mu      sync.Mutex
	current *block // guarded by mu; nil before the first call and when a block is used up
	owned   []net.Listener
	reuse   int // guarded by mu; the next owned block to go through again once none is free

	// firstBlock picks the block index claim starts from; tests fix it to make processes race.
	firstBlock = rand.IntN
	// claimBlock is claim; a test makes it fail to see a process go through its own blocks
	// again without taking every block on the machine from other processes.
	claimBlock = claim
)

type block struct {
	next, end int // next port to try, one past the block's last
}

// Port returns a loopback TCP port that nothing listens on and that no other caller of this
// package (in this or another process) is given while this process lives.
func Port() (int, error) {
	ps, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// Addr is Port as "127.0.0.1:port".
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// Ports returns n distinct ports as Port does.
func Ports(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	lo, hi := lowest, min(highest, ephemeralStart())
	if (hi-lo)/blockSize < minBlocks {
		return kernelPorts(n)
	}
	out := make([]int, 0, n)
	for len(out) < n {
		if current == nil || current.next >= current.end {
			b, err := claimBlock(lo, hi)
			if err != nil && len(owned) == 0 {
				return nil, err
			}
			if err != nil {
				// Every block is owned, this process holding some: a long-lived process
				// goes through its own blocks again (the servers it gave their ports to
				// have mostly stopped; bindable skips those that have not).
				base := owned[reuse%len(owned)].Addr().(*net.TCPAddr).Port
				reuse++
				b = &block{next: base + 1, end: base + blockSize}
			}
			current = b
		}
		p := current.next
		current.next++
		if bindable(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// claim takes the first free block, starting from a random one so that processes starting
// together do not all race for the same.
func claim(lo, hi int) (*block, error) {
	nblocks := (hi - lo) / blockSize
	start := firstBlock(nblocks)
	for i := range nblocks {
		base := lo + ((start+i)%nblocks)*blockSize
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base)))
		if err != nil {
			continue // another process owns it, or something else listens on its first port
		}
		owned = append(owned, l) // held until the process exits
		return &block{next: base + 1, end: base + blockSize}, nil
	}
	return nil, fmt.Errorf("freeport: all %d port blocks in %d-%d are taken", nblocks, lo, hi-1)
}

// bindable reports whether a listener could bind 127.0.0.1:p and the wildcard address's p now.
func bindable(p int) bool {
	for _, host := range []string{"127.0.0.1", "0.0.0.0"} {
		l, err := net.Listen("tcp4", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// kernelPorts is the fallback: ports the kernel picks, held until all n are chosen so they are
// distinct (and racy as described in the package comment).
func kernelPorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range (32768 when unknown, the
// kernel's default).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	p, err := strconv.Atoi(f[0])
	if err != nil || p < 1024 {
		return 32768
	}
	return p
}
