package bridgebench

import (
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/benchkit"
)

func TestGoalsAndMarkdown(t *testing.T) {
	res := &Result{Config: DefaultConfig(false), PinnedCPU: 1}
	res.Config.Repeats = 3
	for rep, v := range []float64{60000, 52000, 40000} {
		res.Bridge = append(res.Bridge, BridgeRun{Batch: 100, Repeat: rep, Records: v, Cores: 0.5, PerCore: 2 * v},
			BridgeRun{Batch: 1, Repeat: rep, Records: v / 5, Cores: 0.9, PerCore: v / 4})
		res.Perf = append(res.Perf, PerfRun{Repeat: rep, Records: 2 * v})
		res.Latency = append(res.Latency, LatencyRun{Repeat: rep, Rate: 10000, P50ms: 1, P99ms: float64(3 + rep)})
	}
	g := goals(res)
	if len(g) != 3 || g[0].Verdict != benchkit.Met || !strings.Contains(g[0].Measured, "52000 records/s") ||
		g[1].Verdict != benchkit.Met || !strings.Contains(g[1].Measured, "4.00 ms") || g[2].Measured != "0.50" {
		t.Errorf("goals %+v", g)
	}
	res.Latency[1].P99ms, res.Latency[2].P99ms = 7, 8
	if g := goals(res); g[1].Verdict != benchkit.NotMet {
		t.Errorf("p99 median 7 ms: %+v", g[1])
	}
	res.Goals = goals(res)
	md := Markdown(res)
	for _, want := range []string{"| bridge, 100 record(s) per POST, 16 clients | 52000 (40000–60000) |", "Kafka ProducerPerformance",
		"The bridge was not the limit", "alone on CPU 1", "**not met**"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
