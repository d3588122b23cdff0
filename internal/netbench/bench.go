package netbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
	"github.com/continuum-project/continuum/internal/testbed/fabric"
)

// Repeat is one run of a case: what the probe or iperf3 measured, and what the fabric and this
// process spent meanwhile.
type Repeat struct {
	Probe *ProbeResult `json:"probe,omitempty"`
	TCP   *IperfResult `json:"tcp,omitempty"`
	// Fabric is the fabric's own account of the measurement window.
	Fabric FabricWindow `json:"fabric"`
	// ProcessCores is the CPU the whole process hosting the fabric used over the window, in
	// cores (the fabric's threads, the Go runtime, the testbed's control loops).
	ProcessCores float64 `json:"process_cores"`
	// ToolCores is the CPU of the measuring programs over the active time, in cores: the probe
	// and the reflector, or the iperf3 client and server (by iperf3's own account).
	ToolCores float64 `json:"tool_cores"`
	// LoadAvg is the host's 1-minute load average when the run ended: which repeats ran on a
	// busy machine.
	LoadAvg float64 `json:"loadavg_1m"`
	// Drops are the fabric's drops over the window by reason.
	Drops map[string]uint64 `json:"drops,omitempty"`
}

// FabricWindow is the difference of two fabric.Stats snapshots taken just before the probe or
// iperf3 client started and just after it exited.
type FabricWindow struct {
	Seconds float64 `json:"seconds"` // the window's wall time
	// ActiveSeconds is the part of the window the load was offered: the probe's sending time or
	// iperf3's test time (the window also holds the program's start and its wait for the last
	// replies). Rates are per active second.
	ActiveSeconds float64 `json:"active_seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"` // CPU of the fabric's threads
	Cores         float64 `json:"cores"`       // CPUSeconds / ActiveSeconds
	// Packets and Bytes are the wire packets and IP bytes carried, summed over every link
	// direction (a round trip counts twice; a segmentation-offload super-packet counts its segments).
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	// CPUPerPacketUs is CPUSeconds over Packets, µs (0 when nothing was carried).
	CPUPerPacketUs float64 `json:"cpu_per_packet_us"`
	// LateP50us and LateP99us are how much later than scheduled the fabric delivered the window's
	// packets: the queueing it added on top of the configured delay, jitter and bandwidth.
	LateP50us float64 `json:"late_p50_us"`
	LateP99us float64 `json:"late_p99_us"`
	// ReadLagP99us is p99 of how long the nodes' packets waited before the fabric read them.
	ReadLagP99us float64 `json:"read_lag_p99_us"`
	Threads      int     `json:"threads"`
	Realtime     int     `json:"realtime_threads"`
}

// PacketsPerSec is the wire packets the fabric carried per active second.
func (w FabricWindow) PacketsPerSec() float64 {
	if w.ActiveSeconds <= 0 {
		return 0
	}
	return float64(w.Packets) / w.ActiveSeconds
}

// fabricWindow is the difference of two snapshots taken wall apart, with active seconds of load
// (clamped to wall).
func fabricWindow(before, after fabric.Stats, wall time.Duration, active float64) FabricWindow {
	w := FabricWindow{Seconds: wall.Seconds(), CPUSeconds: (after.CPU - before.CPU).Seconds(),
		Threads: after.Threads, Realtime: after.Realtime}
	w.ActiveSeconds = min(active, w.Seconds)
	if w.ActiveSeconds <= 0 {
		w.ActiveSeconds = w.Seconds
	}
	if w.ActiveSeconds > 0 {
		w.Cores = w.CPUSeconds / w.ActiveSeconds
	}
	for i, l := range after.Links {
		w.Packets += l.Packets
		w.Bytes += l.Bytes
		if i < len(before.Links) {
			w.Packets -= min(before.Links[i].Packets, l.Packets)
			w.Bytes -= min(before.Links[i].Bytes, l.Bytes)
		}
	}
	if w.Packets > 0 {
		w.CPUPerPacketUs = w.CPUSeconds * 1e6 / float64(w.Packets)
	}
	late := after.Late.Sub(before.Late)
	w.LateP50us = us(late.Quantile(0.50))
	w.LateP99us = us(late.Quantile(0.99))
	w.ReadLagP99us = us(after.ReadLag.Sub(before.ReadLag).Quantile(0.99))
	return w
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// CaseResult is a case with its repeats, in the order they ran.
type CaseResult struct {
	Case
	Runs []Repeat `json:"runs"`
}

// Options configure Run.
type Options struct {
	Binary   string    // continuum binary run inside the nodes
	StateDir string    // testbed state dir
	Repeats  int       // runs of every case (default 1)
	Log      io.Writer // progress lines (nil = none)
	Command  string    // the command line that regenerates the result, for its header
}

// Result is the whole benchmark: what produced it, every case, the verdicts.
type Result struct {
	benchkit.Header
	Repeats int `json:"repeats"`
	// Congestion is the host's default TCP congestion control
	// (/proc/sys/net/ipv4/tcp_congestion_control), which the nodes' iperf3 used unless it says otherwise.
	Congestion string          `json:"tcp_congestion_control,omitempty"`
	Cases      []CaseResult    `json:"cases"`
	Goals      []benchkit.Goal `json:"goals"`
}

// Run measures every case opts.Repeats times, each run on a fresh testbed hosted by this process.
// Repeats run the whole list in turn, the odd ones in reverse order, so a change of the machine's
// load during the run does not always fall on the same cases, and a case and its baseline run
// next to each other each time.
func Run(ctx context.Context, cases []Case, opts Options) (*Result, error) {
	if opts.Repeats < 1 {
		opts.Repeats = 1
	}
	res := &Result{Header: benchkit.Start(opts.Command), Repeats: opts.Repeats, Congestion: hostCongestion()}
	res.Cases = make([]CaseResult, len(cases))
	for i, c := range cases {
		res.Cases[i].Case = c
	}
	n := 0
	for rep := range opts.Repeats {
		order := make([]int, len(cases))
		for i := range order {
			order[i] = i
		}
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			c := cases[i]
			r, err := runCase(ctx, n, c, opts)
			n++
			if err != nil {
				return res, fmt.Errorf("%s (repeat %d): %w", c, rep+1, err)
			}
			if opts.Log != nil {
				fmt.Fprintf(opts.Log, "[%d/%d] %s: %s\n", rep+1, opts.Repeats, c, r.summary())
			}
			r.LoadAvg = res.SampleLoad()
			res.Cases[i].Runs = append(res.Cases[i].Runs, *r)
		}
	}
	res.Finish()
	res.Goals = Goals(res.Cases)
	return res, nil
}

// activeSeconds is how long the load was offered: the probe's sending time or iperf3's test.
func (r *Repeat) activeSeconds() float64 {
	switch {
	case r.TCP != nil:
		return r.TCP.Seconds
	case r.Probe != nil && r.Probe.RateAchv > 0:
		return float64(r.Probe.Sent) / r.Probe.RateAchv
	}
	return 0
}

func (r *Repeat) summary() string {
	f := fmt.Sprintf("fabric %.2f cores %.2f µs/pkt late p99 %.0f µs, process %.2f cores, tool %.2f cores",
		r.Fabric.Cores, r.Fabric.CPUPerPacketUs, r.Fabric.LateP99us, r.ProcessCores, r.ToolCores)
	if r.TCP != nil {
		return fmt.Sprintf("%.3f Gbit/s, %d retransmits, %s", r.TCP.Gbps(), r.TCP.Retransmits, f)
	}
	return r.Probe.String() + ", " + f
}

// hostCongestion is the host's default TCP congestion control ("" when unreadable).
func hostCongestion() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func runCase(ctx context.Context, i int, c Case, opts Options) (*Repeat, error) {
	topo := &testbed.Topology{
		Nodes: []testbed.Node{{Name: "a"}, {Name: "b"}},
		Links: []testbed.Link{{Between: []string{"a", "b"}, LinkProps: testbed.LinkProps{
			Delay: spec.Duration{Duration: c.Delay}, Jitter: spec.Duration{Duration: c.Jitter},
			Loss: spec.Percent(c.Loss), Bandwidth: spec.Bandwidth(c.Bandwidth)}}},
	}
	topo.ApplyDefaults()
	tb, err := testbed.Up(topo, testbed.Options{Name: fmt.Sprintf("bench%d-%d", os.Getpid()%100000, i),
		StateDir: opts.StateDir, Seed: int64(i + 1), Launcher: opts.Binary})
	if err != nil {
		return nil, err
	}
	defer tb.Down()
	// The far end is node b across the link, or for a baseline the same node over loopback.
	farNode, target := "b", "b"
	if c.Group == GroupBaseline {
		farNode, target = "a", "127.0.0.1"
	}
	var measure func() (*Repeat, error)
	if c.TCP() {
		if err := startIperfServer(ctx, tb, farNode, "a", target); err != nil {
			return nil, err
		}
		measure = func() (*Repeat, error) {
			r, err := runIperf(ctx, tb, "a", "iperf3-client", []string{"-c", target, "-p", iperfPort,
				"-t", fmt.Sprint(max(int(c.Duration.Round(time.Second)/time.Second), 1)), "-P", fmt.Sprint(c.Streams)})
			return &Repeat{TCP: r}, err
		}
	} else {
		if err := startReflector(ctx, tb, opts.Binary, farNode, target+":9000"); err != nil {
			return nil, err
		}
		measure = func() (*Repeat, error) {
			r, err := runProbe(ctx, tb, opts.Binary, "probe", ProbeConfig{Target: target + ":9000", Rate: c.Rate, Duration: c.Duration, Size: c.Size})
			return &Repeat{Probe: r}, err
		}
	}
	refl0 := procCPU(tb, "reflector")
	before := tb.FabricStats()
	cpu0 := procstat.SelfCPU()
	t0 := time.Now()
	run, err := measure()
	if err != nil {
		return nil, err
	}
	wall := time.Since(t0)
	run.ProcessCores = (procstat.SelfCPU() - cpu0).Seconds() / wall.Seconds()
	after := tb.FabricStats()
	run.Fabric = fabricWindow(before, after, wall, run.activeSeconds())
	switch {
	case run.TCP != nil:
		run.ToolCores = (run.TCP.HostCPU + run.TCP.RemoteCPU) / 100
	case run.Probe != nil && run.Fabric.ActiveSeconds > 0:
		run.ToolCores = (run.Probe.CPUSeconds + procCPU(tb, "reflector") - refl0) / run.Fabric.ActiveSeconds
	}
	for k, v := range after.Drops {
		if d := v - min(before.Drops[k], v); d > 0 {
			if run.Drops == nil {
				run.Drops = map[string]uint64{}
			}
			run.Drops[k] = d
		}
	}
	return run, nil
}

// procCPU is the CPU seconds a running process's cgroup has used (0 when it is not running).
func procCPU(tb *testbed.Testbed, name string) float64 {
	p, err := tb.Proc(name)
	if err != nil {
		return 0
	}
	return p.Status().CPUSeconds
}

// startReflector runs the UDP reflector in node and waits until it answers probes from node a
// (UDP has no handshake to wait for).
func startReflector(ctx context.Context, tb *testbed.Testbed, bin, node, target string) error {
	if _, err := tb.Start(testbed.ProcSpec{Name: "reflector", Node: node, Args: []string{bin, "bench", "udp-reflect", "--listen", ":9000"}}); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := runProbe(ctx, tb, bin, "warmup", ProbeConfig{Target: target, Rate: 100, Duration: 100 * time.Millisecond, Linger: 300 * time.Millisecond})
		if err == nil && r.Received > 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reflector not answering: %v", err)
		}
	}
}
