package netbench

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
)

func TestProbeAgainstReflectorOnLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Reserve a free port, then hand it to the reflector.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	errc := make(chan error, 1)
	go func() { errc <- Reflect(ctx, addr) }()
	var r *ProbeResult
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err = Probe(ctx, ProbeConfig{Target: addr, Rate: 2000, Duration: 500 * time.Millisecond, Size: 100, Linger: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.Received > 0 || time.Now().After(deadline) {
			break
		}
	}
	if r.Sent != 1000 {
		t.Errorf("sent %d packets, want 1000 (2000 pps x 0.5 s)", r.Sent)
	}
	if r.Loss > 0.01 {
		t.Errorf("loss %.3f on loopback", r.Loss)
	}
	if r.P50us <= 0 || r.P50us > r.P99us || r.P99us > r.MaxUs {
		t.Errorf("inconsistent percentiles: %+v", r)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("reflector: %v", err)
	}
}

func TestMarkdownVerdicts(t *testing.T) {
	cases := []CaseResult{
		{Case: Case{Group: "accuracy", Delay: 10 * time.Millisecond, Rate: 1000}, Probe: ProbeResult{P50us: 20150, P99us: 20900}},
		{Case: Case{Group: "accuracy", Delay: time.Millisecond, Rate: 20000}, Probe: ProbeResult{P50us: 2600, P99us: 4000}},
		{Case: Case{Group: "loss", Delay: time.Millisecond, Loss: 0.1, Rate: 1000}, Probe: ProbeResult{Sent: 10000, Loss: 0.19}},
	}
	res := &Result{Header: benchkit.Header{Command: "continuum bench testbed", Machine: "test machine"}, Cases: cases}
	md := Markdown(res)
	for _, want := range []string{"Regenerate with:\n\n```\ncontinuum bench testbed\n```", "- Machine: test machine",
		"## Result against the goals\n\n- Delay accuracy (median and p99): met in 1 of 2 cases (10ms@1000pps): **not met**\n",
		// The 1 ms accuracy row is in the throughput table, with "no": so is the goal.
		"- ≥50k packets/s through the fabric with p99 raised by at most 1 ms over the loopback baseline and <0.1% loss: no case on a 1 ms link kept p99 within 1 ms of the ideal: **not met**",
		"- Loss: 10% configured -> within ±2% one way: 10.00% measured one way: **met**",
		"## Delay accuracy", "| 10ms | 1000 | 20.00 | 20.150 |", "| yes | yes |", "| **no** | **no** |",
		"## Throughput of the emulated link path", "## Loss accuracy", "| 10% | 10000 | 19.00% | 10.00% |", "raw results (JSON)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The throughput goal takes the highest achieved rate whose p99 the fabric raised by at most
// 1 ms over the loopback baseline at the same rate, without loss.
func TestThroughputGoal(t *testing.T) {
	tp := func(rate int, achieved, p99us, loss float64) CaseResult {
		return CaseResult{Case: Case{Group: "throughput", Delay: time.Millisecond, Rate: rate, Size: 64},
			Probe: ProbeResult{RateAchv: achieved, P50us: 2100, P99us: p99us, Loss: loss}}
	}
	base := func(rate int) CaseResult {
		return CaseResult{Case: Case{Group: "baseline", Rate: rate, Size: 64}, Probe: ProbeResult{P50us: 50, P99us: 200}}
	}
	for _, c := range []struct {
		name  string
		cases []CaseResult
		want  string
	}{
		{"met", []CaseResult{tp(10000, 10000, 2500, 0), tp(30000, 29900, 3100, 0), base(10000), base(30000)},
			"highest rate 29900 packets/s each way (59800 packets/s through the fabric counting replies): **met**"},
		{"p99 too high at the top", []CaseResult{tp(10000, 10000, 2500, 0), tp(30000, 29900, 3300, 0), base(10000), base(30000)},
			"highest rate 10000 packets/s each way (20000 packets/s through the fabric counting replies): **not met**"},
		{"lossy", []CaseResult{tp(30000, 29900, 2500, 0.01), base(30000)}, "no case on a 1 ms link kept p99 within 1 ms of the ideal: **not met**"},
		{"an accuracy row at 1 ms counts", []CaseResult{{Case: Case{Group: "accuracy", Delay: time.Millisecond, Rate: 1000},
			Probe: ProbeResult{RateAchv: 1000, P50us: 2100, P99us: 2400}}, base(1000)},
			"highest rate 1000 packets/s each way (2000 packets/s through the fabric counting replies): **not met**"},
		{"no case on a 1 ms link", []CaseResult{{Case: Case{Group: "accuracy", Delay: 10 * time.Millisecond, Rate: 1000}}},
			"**not evaluated** (no case on a 1 ms link)"},
	} {
		var lines []string
		for _, g := range Goals(c.cases) {
			lines = append(lines, g.Line())
		}
		if got := strings.Join(lines, "\n"); !strings.Contains(got, c.want) {
			t.Errorf("%s: goals lack %q:\n%s", c.name, c.want, got)
		}
	}
}
