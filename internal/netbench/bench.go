package netbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/testbed"
)

// Case is one measurement: a 2-node testbed whose link has Delay and Loss, probed at Rate
// packets/s of Size-byte payloads for Duration.
type Case struct {
	Group    string        `json:"group"` // accuracy, throughput, loss, baseline
	Delay    time.Duration `json:"delay"`
	Loss     float64       `json:"loss"`
	Rate     int           `json:"rate"`
	Size     int           `json:"size"`
	Duration time.Duration `json:"duration"`
}

// CaseResult is a case with what was measured. FabricCores is the CPU the process hosting the
// fabric used while the probe ran, in cores.
type CaseResult struct {
	Case
	Probe       ProbeResult       `json:"probe"`
	FabricCores float64           `json:"fabric_cores"`
	Drops       map[string]uint64 `json:"drops"`
}

// Options configure Run.
type Options struct {
	Binary   string    // continuum binary run inside the nodes
	StateDir string    // testbed state dir
	Quick    bool      // shorter cases (for tests)
	Log      io.Writer // progress lines (nil = none)
	Command  string    // the command line that regenerates the result, for its header
}

// Result is the whole benchmark: what produced it, every case, the verdicts.
type Result struct {
	benchkit.Header
	Cases []CaseResult    `json:"cases"`
	Goals []benchkit.Goal `json:"goals"`
}

// Cases returns the benchmark's cases (see docs/benchmarks/testbed.md for why these).
func Cases(quick bool) []Case {
	d := func(long, short time.Duration) time.Duration {
		if quick {
			return short
		}
		return long
	}
	var cs []Case
	for _, delay := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
		cs = append(cs, Case{Group: "accuracy", Delay: delay, Rate: 1000, Size: 64, Duration: d(10*time.Second, 2*time.Second)})
		cs = append(cs, Case{Group: "accuracy", Delay: delay, Rate: 20000, Size: 64, Duration: d(5*time.Second, time.Second)})
	}
	for _, rate := range []int{10000, 30000, 50000, 70000} {
		cs = append(cs, Case{Group: "throughput", Delay: time.Millisecond, Rate: rate, Size: 64, Duration: d(5*time.Second, time.Second)})
	}
	for _, rate := range []int{10000, 20000, 40000} {
		cs = append(cs, Case{Group: "throughput", Delay: time.Millisecond, Rate: rate, Size: 1400, Duration: d(5*time.Second, time.Second)})
	}
	cs = append(cs, Case{Group: "loss", Delay: time.Millisecond, Loss: 0.10, Rate: 1000, Size: 64, Duration: d(10*time.Second, 3*time.Second)})
	// The baseline: the same probe and reflector inside one node over loopback, no fabric. On a
	// small machine the probe itself has a latency tail at high rates; "added error" is measured
	// against this, as the goal asks for the error the emulated path adds.
	for _, c := range cs {
		if c.Group != "loss" && c.Delay == time.Millisecond {
			cs = append(cs, Case{Group: "baseline", Rate: c.Rate, Size: c.Size, Duration: c.Duration})
		}
	}
	if !quick {
		return cs
	}
	var q []Case
	for _, c := range cs {
		if (c.Group == "accuracy" && c.Delay == time.Millisecond) || c.Group == "loss" || (c.Group == "baseline" && c.Size == 64 && c.Rate <= 20000) {
			q = append(q, c)
		}
	}
	return q
}

// Select keeps the cases of the named groups (all when groups is empty); a group no case has is
// an error naming the groups there are.
func Select(cases []Case, groups []string) ([]Case, error) {
	if len(groups) == 0 {
		return cases, nil
	}
	var have []string
	for _, c := range cases {
		if !slices.Contains(have, c.Group) {
			have = append(have, c.Group)
		}
	}
	var out []Case
	for _, g := range groups {
		if !slices.Contains(have, g) {
			return nil, fmt.Errorf("no case group %q (groups: %s)", g, strings.Join(have, ", "))
		}
	}
	for _, c := range cases {
		if slices.Contains(groups, c.Group) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Run measures every case on a fresh testbed hosted by this process.
func Run(ctx context.Context, cases []Case, opts Options) (*Result, error) {
	res := &Result{Header: benchkit.Start(opts.Command)}
	for i, c := range cases {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		r, err := runCase(ctx, i, c, opts)
		if err != nil {
			return res, fmt.Errorf("case %d (%s, delay %v, %d pps, %d B): %w", i, c.Group, c.Delay, c.Rate, c.Size, err)
		}
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "%-10s delay %-5v loss %3.0f%% %6d pps %4d B: %s, fabric %.2f cores\n",
				c.Group, c.Delay, c.Loss*100, c.Rate, c.Size, r.Probe.String(), r.FabricCores)
		}
		res.Cases = append(res.Cases, *r)
		res.SampleLoad()
	}
	res.Finish()
	res.Goals = Goals(res.Cases)
	return res, nil
}

func runCase(ctx context.Context, i int, c Case, opts Options) (*CaseResult, error) {
	loss := spec.Percent(c.Loss)
	topo := &testbed.Topology{
		Nodes: []testbed.Node{{Name: "a"}, {Name: "b"}},
		Links: []testbed.Link{{Between: []string{"a", "b"}, LinkProps: testbed.LinkProps{
			Delay: spec.Duration{Duration: c.Delay}, Loss: loss}}},
	}
	topo.ApplyDefaults()
	tb, err := testbed.Up(topo, testbed.Options{Name: fmt.Sprintf("bench%d-%d", os.Getpid()%100000, i),
		StateDir: opts.StateDir, Seed: int64(i + 1), Launcher: opts.Binary})
	if err != nil {
		return nil, err
	}
	defer tb.Down()
	reflNode, target := "b", "b:9000"
	if c.Group == "baseline" {
		reflNode, target = "a", "127.0.0.1:9000"
	}
	if _, err := tb.Start(testbed.ProcSpec{Name: "reflector", Node: reflNode, Args: []string{opts.Binary, "bench", "udp-reflect", "--listen", ":9000"}}); err != nil {
		return nil, err
	}
	// Wait until the reflector answers (UDP has no handshake to wait for).
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := runProbe(ctx, tb, opts.Binary, "warmup", ProbeConfig{Target: target, Rate: 100, Duration: 100 * time.Millisecond, Linger: 300 * time.Millisecond})
		if err == nil && r.Received > 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reflector not answering: %v", err)
		}
	}
	before := tb.DropCounts()
	cpu0 := procstat.SelfCPU()
	t0 := time.Now()
	r, err := runProbe(ctx, tb, opts.Binary, "probe", ProbeConfig{Target: target, Rate: c.Rate, Duration: c.Duration, Size: c.Size})
	if err != nil {
		return nil, err
	}
	cores := (procstat.SelfCPU() - cpu0).Seconds() / time.Since(t0).Seconds()
	drops := map[string]uint64{}
	for k, v := range tb.DropCounts() {
		if d := v - before[k]; d > 0 {
			drops[k] = d
		}
	}
	return &CaseResult{Case: c, Probe: *r, FabricCores: cores, Drops: drops}, nil
}

// runProbe runs `continuum bench udp-probe` in node a and parses its JSON result.
func runProbe(ctx context.Context, tb *testbed.Testbed, bin, name string, cfg ProbeConfig) (*ProbeResult, error) {
	var stdout bytes.Buffer
	args := []string{bin, "bench", "udp-probe", "--target", cfg.Target, "--rate", fmt.Sprint(cfg.Rate),
		"--duration", cfg.Duration.String(), "--size", fmt.Sprint(max(cfg.Size, 16))}
	if cfg.Linger > 0 {
		args = append(args, "--linger", cfg.Linger.String())
	}
	p, err := tb.Start(testbed.ProcSpec{Name: name, Node: "a", Args: args, Stdout: &stdout})
	if err != nil {
		return nil, err
	}
	defer tb.Remove(name, time.Second)
	select {
	case <-p.Done():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if st := p.Status(); st.ExitCode != 0 {
		return nil, fmt.Errorf("probe exited %d %s", st.ExitCode, st.Signal)
	}
	var r ProbeResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		return nil, fmt.Errorf("probe output %q: %w", stdout.String(), err)
	}
	return &r, nil
}

// Verdicts against the goals.
func accuracyOK(r CaseResult) (medianOK, tailOK bool) {
	want := 2 * float64(r.Delay.Microseconds())
	medianOK = math.Abs(r.Probe.P50us-want) <= 0.05*want+200
	tailOK = r.Probe.P99us-r.Probe.P50us <= 1000
	return
}

// Markdown renders the result as docs/benchmarks/testbed.md: the kit's header, the verdicts,
// a table per goal and the raw JSON.
func Markdown(res *Result) string {
	results := res.Cases
	d := benchkit.NewDoc("Testbed link emulation benchmark", res.Header)
	d.Para("Each case is a fresh 2-node testbed; a UDP probe in node a sends paced packets to a reflector in node b " +
		"(both batch with sendmmsg/recvmmsg). RTTs are measured by the probe; \"fabric cores\" is the CPU used by the process " +
		"hosting the userspace fabric while the probe ran.")
	gs := res.Goals
	if gs == nil {
		gs = Goals(results)
	}
	d.Goals("Result against the goals", gs)

	d.Section("Delay accuracy")
	d.Para("Goal: RTT median within ±5%% (+0.2 ms) of 2x the one-way delay; p99 within +1 ms of the median.")
	t := benchkit.NewTable("lrrrrrrrrll", "one-way delay", "rate (pps)", "expected RTT (ms)", "p50 (ms)", "p90 (ms)", "p99 (ms)", "p99.9 (ms)", "max (ms)", "loss", "median ok", "p99-p50 ok")
	for _, r := range results {
		if r.Group != "accuracy" {
			continue
		}
		mok, tok := accuracyOK(r)
		t.Rowf("%v | %d | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f%% | %s | %s", r.Delay, r.Rate,
			2*float64(r.Delay.Microseconds())/1000, r.Probe.P50us/1000, r.Probe.P90us/1000, r.Probe.P99us/1000,
			r.Probe.P999us/1000, r.Probe.MaxUs/1000, r.Probe.Loss*100, benchkit.YesNo(mok), benchkit.YesNo(tok))
	}
	d.Table(t)

	d.Section("Throughput of the emulated link path")
	d.Para("Goal: ≥50k packets/s with ≤1 ms added error (1 ms one-way link, so the ideal RTT is 2 ms). " +
		"Rate is offered load per direction; every packet crosses the fabric twice (request and reply).")
	t = benchkit.NewTable("rrrrrrrrrrl", "payload (B)", "offered (pps)", "achieved (pps)", "Mbit/s each way", "loss", "p50 (ms)", "p99 (ms)",
		"baseline p50 / p99 (ms)", "added p50 / p99 (ms)", "fabric cores", "within 1 ms")
	for _, r := range results {
		if !throughputRow(r) {
			continue
		}
		base := baselineFor(results, r)
		add50, add99, ok := addedError(r, base)
		mbit := r.Probe.RateAchv * float64(r.Size+28) * 8 / 1e6
		t.Rowf("%d | %d | %.0f | %.1f | %.2f%% | %.3f | %.3f | %.3f / %.3f | %.3f / %.3f | %.2f | %s", r.Size, r.Rate, r.Probe.RateAchv, mbit,
			r.Probe.Loss*100, r.Probe.P50us/1000, r.Probe.P99us/1000, base.P50us/1000, base.P99us/1000, add50, add99, r.FabricCores, benchkit.YesNo(ok))
	}
	d.Table(t)

	d.Section("Loss accuracy")
	d.Para("Goal: 10%% configured -> 10±2%% measured over 10k packets. Loss applies per direction, so a round trip " +
		"survives with probability 0.9² = 81%%; the one-way figure is derived as 1-sqrt(1-round-trip loss) and also read from the fabric's drop counter.")
	t = benchkit.NewTable("rrrrrl", "configured (one way)", "packets", "round-trip loss", "one-way loss (derived)", "fabric loss drops", "within 10±2%")
	for _, r := range results {
		if r.Group != "loss" {
			continue
		}
		oneWay := oneWayLoss(r)
		t.Rowf("%.0f%% | %d | %.2f%% | %.2f%% | %d | %s", r.Loss*100, r.Probe.Sent, r.Probe.Loss*100, oneWay*100,
			r.Drops["loss"], benchkit.YesNo(math.Abs(oneWay-r.Loss) <= 0.02))
	}
	d.Table(t)
	d.RawJSON(res)
	return d.String()
}

// oneWayLoss derives the loss of one direction from the round trip's: a packet survives the
// round trip with probability (1 - one way)².
func oneWayLoss(r CaseResult) float64 { return 1 - math.Sqrt(1-r.Probe.Loss) }

// Goals judges the cases against the goals, so a regenerated file states its own result.
func Goals(results []CaseResult) []benchkit.Goal {
	var accOK, accAll []string
	best := 0.0
	for _, r := range results {
		switch r.Group {
		case "accuracy":
			name := fmt.Sprintf("%v@%dpps", r.Delay, r.Rate)
			accAll = append(accAll, name)
			if m, t := accuracyOK(r); m && t {
				accOK = append(accOK, name)
			}
		}
		if throughputRow(r) {
			if _, _, ok := addedError(r, baselineFor(results, r)); ok {
				best = max(best, r.Probe.RateAchv)
			}
		}
	}
	var gs []benchkit.Goal
	const accuracy = "Delay accuracy (median and p99)"
	if len(accAll) == 0 {
		gs = append(gs, benchkit.Skip(accuracy, "no accuracy case"))
	} else {
		measured := fmt.Sprintf("met in %d of %d cases", len(accOK), len(accAll))
		if len(accOK) > 0 {
			measured += " (" + strings.Join(accOK, ", ") + ")"
		}
		gs = append(gs, benchkit.Check(accuracy, len(accOK) == len(accAll), measured))
	}
	const rate = "≥50k packets/s through the fabric with p99 raised by at most 1 ms over the loopback baseline and <0.1% loss"
	switch {
	case best > 0:
		gs = append(gs, benchkit.Check(rate, 2*best >= 50000,
			fmt.Sprintf("highest rate %.0f packets/s each way (%.0f packets/s through the fabric counting replies)", best, 2*best)))
	case !slices.ContainsFunc(results, throughputRow):
		gs = append(gs, benchkit.Skip(rate, "no case on a 1 ms link"))
	default:
		gs = append(gs, benchkit.Check(rate, false, "no case on a 1 ms link kept p99 within 1 ms of the ideal"))
	}
	for _, r := range results {
		if r.Group == "loss" {
			oneWay := oneWayLoss(r)
			gs = append(gs, benchkit.Check(fmt.Sprintf("Loss: %.0f%% configured -> within ±2%% one way", r.Loss*100),
				math.Abs(oneWay-r.Loss) <= 0.02, fmt.Sprintf("%.2f%% measured one way", oneWay*100)))
		}
	}
	return gs
}

// throughputRow reports whether r is judged for throughput: the throughput cases and the 1 ms
// accuracy cases, which measure the same link at lower rates. The table and the goal take the
// same rows, so the headline never contradicts a row (bench testbed --quick runs no throughput
// case, yet its 1 ms rows are in the table).
func throughputRow(r CaseResult) bool {
	return r.Group == "throughput" || (r.Group == "accuracy" && r.Delay == time.Millisecond)
}

// baselineFor is the loopback measurement at r's rate and size (zero if not measured).
func baselineFor(results []CaseResult, r CaseResult) ProbeResult {
	for _, b := range results {
		if b.Group == "baseline" && b.Rate == r.Rate && b.Size == r.Size {
			return b.Probe
		}
	}
	return ProbeResult{}
}

// addedError is what the emulated path adds to the round trip beyond the configured delay and
// beyond what the same probe sees without the fabric, at the median and at p99; ok when p99's
// added error is at most 1 ms with under 0.1% loss.
func addedError(r CaseResult, base ProbeResult) (p50, p99 float64, ok bool) {
	ideal := 2 * float64(r.Delay.Microseconds()) / 1000
	p50 = r.Probe.P50us/1000 - ideal - base.P50us/1000
	p99 = r.Probe.P99us/1000 - ideal - base.P99us/1000
	return p50, p99, p99 <= 1 && r.Probe.Loss < 0.001
}
