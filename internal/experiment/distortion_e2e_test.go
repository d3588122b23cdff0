package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/results"
)

// The "done when": a run that saturates the testbed's fabric is flagged as distorted,
// with the warning in its report, and the quickstart is not. The flood is two kinds of the
// test's own around the engine's UDP probe (`continuum bench udp-reflect` / `udp-probe`): no
// system runs an arbitrary command in a node, and the probe is the fabric's own load generator.

type udpReflectConfig struct {
	Port int `yaml:"port"`
}

type udpFloodConfig struct {
	Target string `yaml:"target"` // a udp-reflect component
	Rate   int    `yaml:"rate"`   // packets per second, each answered
	Size   int    `yaml:"size"`
}

func init() {
	kind.Register(kind.Def[udpReflectConfig]{
		Name: "test-udp-reflect", Role: kind.RoleComponent, Summary: "echoes UDP (continuum bench udp-reflect)",
		Defaults: func() *udpReflectConfig { return &udpReflectConfig{Port: 9000} },
		Command: func(env kind.Env, c *udpReflectConfig) (kind.Command, error) {
			return kind.Command{Args: []string{env.Binary, "bench", "udp-reflect", "--listen", fmt.Sprintf(":%d", c.Port)}}, nil
		},
	})
	kind.Register(kind.Def[udpFloodConfig]{
		Name: "test-udp-flood", Role: kind.RoleWorkload, Summary: "paced UDP to a reflector (continuum bench udp-probe)",
		Defaults: func() *udpFloodConfig { return &udpFloodConfig{Rate: 1000, Size: 64} },
		Command: func(env kind.Env, c *udpFloodConfig) (kind.Command, error) {
			comp, ok := env.Components[c.Target]
			if !ok {
				return kind.Command{}, fmt.Errorf("target %q: no such component", c.Target)
			}
			port := comp.Config.(*udpReflectConfig).Port
			return kind.Command{Args: []string{env.Binary, "bench", "udp-probe", "--target", fmt.Sprintf("%s:%d", comp.Node, port),
				"--rate", fmt.Sprint(c.Rate), "--size", fmt.Sprint(c.Size), "--duration", env.Duration.String()}}, nil
		},
	})
}

// readFabric returns run 001's fabric figures from summary.json and the report's HTML.
func readFabric(t *testing.T, res *Result) (*results.Fabric, string) {
	t.Helper()
	var sum results.Summary
	if err := results.ReadJSON(filepath.Join(res.Dir, results.SummaryFile), &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Runs) != 1 || sum.Runs[0].Fabric == nil {
		t.Fatalf("summary.json: want one run with fabric figures, got %+v", sum.Runs)
	}
	h, err := os.ReadFile(report.HTMLPath(res.Dir))
	if err != nil {
		t.Fatal(err)
	}
	f := sum.Runs[0].Fabric
	t.Logf("fabric: %.0f packets/s, CPU mean %.2f max %.2f cores, late p50 %.0f p99 %.0f max %.0f µs over %d packets, drops %v, distortion %q",
		f.PacketsPerS, f.CPUCoresMean, f.CPUCoresMax, f.LateP50US, f.LateP99US, f.LateMaxUS, f.Delivered, f.Drops, f.Distortion)
	return f, string(h)
}

// TestFloodDistortsAndIsFlagged: UDP at 200k packets/s each way, far beyond what the fabric
// forwards on a small machine, trips the rule every time (its CPU or its lateness); the
// report carries the warning with the figures.
func TestFloodDistortsAndIsFlagged(t *testing.T) {
	res := executeE2E(t, "flood.yaml", Options{})
	f, html := readFabric(t, res)
	if !f.Distorted || len(f.Distortion) == 0 {
		t.Fatalf("a saturating flood was not judged distorted: %+v", f)
	}
	if !strings.Contains(html, `class="distorted"`) || !strings.Contains(html, "The testbed distorted this run:") {
		t.Error("report.html has no distortion warning")
	}
	for _, r := range f.Distortion {
		if !strings.Contains(html, strings.ReplaceAll(r, ">", "&gt;")) {
			t.Errorf("report.html lacks the reason %q", r)
		}
	}
	md, _ := os.ReadFile(report.MarkdownPath(res.Dir))
	if !strings.Contains(string(md), "The testbed distorted this run:") {
		t.Error("summary.md has no distortion warning")
	}
	rows, err := results.ReadNetwork(filepath.Join(results.RunDir(res.Dir, "001"), results.NetworkFile))
	if err != nil || len(rows) == 0 {
		t.Fatalf("network.csv: %d rows, %v", len(rows), err)
	}
	if links, err := results.ReadLinks(filepath.Join(results.RunDir(res.Dir, "001"), results.LinksFile)); err != nil || len(links) != 2 {
		t.Errorf("links.csv: %+v, %v; want both directions of the one link", links, err)
	}
}

// TestQuickstartNotDistorted: the quickstart (50 requests/s per target) never comes near
// the limits, also on a busy machine: no warning.
func TestQuickstartNotDistorted(t *testing.T) {
	res := executeE2E(t, "../../../../scenarios/quickstart.yaml", Options{})
	f, html := readFabric(t, res)
	if f.Distorted {
		// Say whether the system's own figures were disturbed too (the edge's RTT is 20 ms as
		// configured): if so the verdict was right and the host was too busy for the emulation
		// (CPU hogs starving the kernel's packet processing, another testbed's fabric flooding).
		var sum results.Summary
		_ = results.ReadJSON(filepath.Join(res.Dir, results.SummaryFile), &sum)
		edge := sum.Runs[0].Metrics["load/edge/latency_ms"]
		t.Errorf("the quickstart was judged distorted: %q (its edge latency p50 %.1f ms, p99 %.1f ms; 20 ms configured)",
			f.Distortion, edge["p50"], edge["p99"])
	}
	if strings.Contains(html, `class="distorted"`) {
		t.Error("report.html warns on the quickstart")
	}
	if !strings.Contains(html, "Emulated network") {
		t.Error("report.html has no Emulated network table")
	}
	if f.Delivered == 0 || f.PacketsPerS <= 0 || len(f.Links) == 0 {
		t.Errorf("the quickstart's fabric figures are empty: %+v", f)
	}
}
