// Package netbench measures the testbed's emulated network from inside its nodes: a UDP
// reflector, a paced UDP round-trip probe (batched with sendmmsg/recvmmsg so the probe itself is
// not the bottleneck), iperf3 (Debian's, run in the nodes) for bulk TCP, and the testbed
// benchmark (`continuum bench testbed`) that runs them over links with known delay, jitter, loss
// and bandwidth, repeats every case, and compares what was configured with what was measured,
// beside a loopback baseline and the fabric's own account of its CPU and lateness.
package netbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/testbed"
)

const batch = 64

// Reflect echoes every UDP datagram received on addr back to its sender until ctx ends.
func Reflect(ctx context.Context, addr string) error {
	pc, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); pc.Close() }()
	setBuffers(pc.(*net.UDPConn))
	conn := ipv4.NewPacketConn(pc)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 65536)}
	}
	for {
		n, err := conn.ReadBatch(msgs, 0)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		out := msgs[:n]
		for i := range out {
			out[i].Buffers[0] = out[i].Buffers[0][:out[i].N]
		}
		for len(out) > 0 {
			k, err := conn.WriteBatch(out, 0)
			if err != nil {
				break // a reply we cannot send is a lost packet, as on a real network
			}
			out = out[k:]
		}
		for i := range msgs[:n] {
			msgs[i].Buffers[0] = msgs[i].Buffers[0][:cap(msgs[i].Buffers[0])]
		}
	}
}

// ProbeConfig parameterises Probe.
type ProbeConfig struct {
	Target   string        // host:port of a reflector
	Rate     int           // packets per second
	Duration time.Duration // sending time
	Size     int           // UDP payload bytes (>= 16)
	Linger   time.Duration // how long to wait for late replies after sending (default 1 s)
}

// ProbeResult is what Probe measured. RTTs are in microseconds.
type ProbeResult struct {
	Sent      int64   `json:"sent"`
	Received  int64   `json:"received"`
	Loss      float64 `json:"loss"` // round-trip loss fraction
	RateAchv  float64 `json:"rate_achieved_pps"`
	MinUs     float64 `json:"min_us"`
	P1us      float64 `json:"p1_us"`
	P10us     float64 `json:"p10_us"`
	P50us     float64 `json:"p50_us"`
	P90us     float64 `json:"p90_us"`
	P99us     float64 `json:"p99_us"`
	P999us    float64 `json:"p999_us"`
	MaxUs     float64 `json:"max_us"`
	MeanUs    float64 `json:"mean_us"`
	Reordered int64   `json:"reordered"`
	// CPUSeconds is the probe process's own CPU time (user + system), so a result can say what
	// the measuring tool cost besides what it measured.
	CPUSeconds float64 `json:"cpu_seconds"`
}

// Probe sends cfg.Rate packets per second to a reflector for cfg.Duration and measures each
// packet's round trip. Packets carry their sequence number and send time, so the RTT is exact
// and late or duplicate replies are recognised.
func Probe(ctx context.Context, cfg ProbeConfig) (*ProbeResult, error) {
	if cfg.Size < 16 {
		cfg.Size = 16
	}
	if cfg.Rate <= 0 || cfg.Duration <= 0 {
		return nil, errors.New("probe: rate and duration must be positive")
	}
	if cfg.Linger == 0 {
		cfg.Linger = time.Second
	}
	raddr, err := net.ResolveUDPAddr("udp4", cfg.Target)
	if err != nil {
		return nil, err
	}
	uc, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	setBuffers(uc)
	conn := ipv4.NewPacketConn(uc)
	base := time.Now()
	total := int64(float64(cfg.Rate) * cfg.Duration.Seconds())
	h := hdr.New(1, 60_000_000, 3)
	var received, reordered atomic.Int64
	seen := make([]bool, total)
	var mu sync.Mutex
	rdone := make(chan struct{})
	go func() {
		defer close(rdone)
		msgs := make([]ipv4.Message, batch)
		for i := range msgs {
			msgs[i].Buffers = [][]byte{make([]byte, 65536)}
		}
		var lastSeq int64 = -1
		for {
			n, err := conn.ReadBatch(msgs, 0)
			if err != nil {
				return
			}
			now := time.Since(base)
			mu.Lock()
			for _, m := range msgs[:n] {
				if m.N < 16 {
					continue
				}
				b := m.Buffers[0]
				seq := int64(binary.LittleEndian.Uint64(b[0:8]))
				sent := time.Duration(binary.LittleEndian.Uint64(b[8:16]))
				if seq < 0 || seq >= total || seen[seq] {
					continue
				}
				seen[seq] = true
				if seq < lastSeq {
					reordered.Add(1)
				}
				lastSeq = max(lastSeq, seq)
				_ = h.RecordValue(max(int64((now-sent)/time.Microsecond), 1))
				received.Add(1)
			}
			mu.Unlock()
		}
	}()
	interval := time.Second / time.Duration(cfg.Rate)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, cfg.Size)}
	}
	var seq int64
	for seq < total && ctx.Err() == nil {
		now := time.Since(base)
		due := min(int64(now/interval)+1, total)
		if due <= seq {
			// Sleep rather than spin: on a 2-core machine a spinning probe takes the CPU the
			// fabric and the reflector need. Oversleeping only makes the next batch larger; each
			// packet carries its own send time, so RTTs stay exact.
			time.Sleep(time.Duration(seq)*interval - now)
			continue
		}
		k := 0
		for seq < due && k < batch {
			b := msgs[k].Buffers[0]
			binary.LittleEndian.PutUint64(b[0:8], uint64(seq))
			binary.LittleEndian.PutUint64(b[8:16], uint64(time.Since(base)))
			seq++
			k++
		}
		out := msgs[:k]
		for len(out) > 0 {
			w, err := conn.WriteBatch(out, 0)
			if err != nil {
				// ENOBUFS and friends: the packet is lost like on a full NIC queue
				out = out[1:]
				continue
			}
			out = out[w:]
		}
	}
	sendTime := time.Since(base)
	deadline := time.After(cfg.Linger)
	for received.Load() < seq {
		select {
		case <-deadline:
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
			continue
		}
		break
	}
	uc.Close()
	<-rdone
	mu.Lock()
	defer mu.Unlock()
	res := &ProbeResult{Sent: seq, Received: received.Load(), Reordered: reordered.Load(),
		RateAchv: float64(seq) / sendTime.Seconds(), CPUSeconds: procstat.SelfCPU().Seconds()}
	if seq > 0 {
		res.Loss = 1 - float64(res.Received)/float64(seq)
	}
	if h.TotalCount() > 0 {
		res.MinUs = float64(h.Min())
		res.P1us = float64(h.ValueAtQuantile(1))
		res.P10us = float64(h.ValueAtQuantile(10))
		res.P50us = float64(h.ValueAtQuantile(50))
		res.P90us = float64(h.ValueAtQuantile(90))
		res.P99us = float64(h.ValueAtQuantile(99))
		res.P999us = float64(h.ValueAtQuantile(99.9))
		res.MaxUs = float64(h.Max())
		res.MeanUs = h.Mean()
	}
	return res, nil
}

// runProbe runs `continuum bench udp-probe` in node a and parses its JSON result.
func runProbe(ctx context.Context, tb *testbed.Testbed, bin, name string, cfg ProbeConfig) (*ProbeResult, error) {
	var stdout bytes.Buffer
	args := []string{bin, "bench", "udp-probe", "--target", cfg.Target, "--rate", fmt.Sprint(cfg.Rate),
		"--duration", cfg.Duration.String(), "--size", fmt.Sprint(max(cfg.Size, 16))}
	if cfg.Linger > 0 {
		args = append(args, "--linger", cfg.Linger.String())
	}
	st, err := runToEnd(ctx, tb, testbed.ProcSpec{Name: name, Node: "a", Args: args, Stdout: &stdout})
	if err != nil {
		return nil, err
	}
	if st.ExitCode != 0 {
		return nil, fmt.Errorf("probe exited %d %s", st.ExitCode, st.Signal)
	}
	var r ProbeResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		return nil, fmt.Errorf("probe output %q: %w", stdout.String(), err)
	}
	return &r, nil
}

// runToEnd runs spec in the testbed until it exits (or ctx ends) and returns how it exited.
func runToEnd(ctx context.Context, tb *testbed.Testbed, spec testbed.ProcSpec) (testbed.ProcStatus, error) {
	p, err := tb.Start(spec)
	if err != nil {
		return testbed.ProcStatus{}, err
	}
	defer tb.Remove(spec.Name, time.Second)
	select {
	case <-p.Done():
		return p.Status(), nil
	case <-ctx.Done():
		return testbed.ProcStatus{}, ctx.Err()
	}
}

// String renders a one-line summary.
func (r *ProbeResult) String() string {
	return fmt.Sprintf("sent %d recv %d loss %.2f%% rate %.0f pps rtt p50 %.0fus p99 %.0fus max %.0fus",
		r.Sent, r.Received, r.Loss*100, r.RateAchv, r.P50us, r.P99us, r.MaxUs)
}

// setBuffers gives the socket 8 MiB buffers; as root SO_*BUFFORCE bypasses net.core.*mem_max, so
// bursts at tens of thousands of packets per second are not dropped by the socket itself.
func setBuffers(c *net.UDPConn) {
	_ = c.SetReadBuffer(8 << 20)
	_ = c.SetWriteBuffer(8 << 20)
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
		})
	}
}
