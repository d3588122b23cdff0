package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/results"
)

// reportingProvider's platforms are fakePlatforms that also report an emulated network.
type reportingProvider struct {
	fakeProvider
	rep platform.NetworkReport
}

func (p reportingProvider) Up(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
	pf, err := p.fakeProvider.Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &reportingPlatform{fakePlatform: pf.(*fakePlatform), rep: p.rep}, nil
}

type reportingPlatform struct {
	*fakePlatform
	rep platform.NetworkReport
}

func (p *reportingPlatform) Network() platform.NetworkReport {
	p.log.add("network")
	return p.rep
}

// A network report as the testbed gives it for a run whose fabric was saturated for a while
// and dropped packets it should not have.
func saturatedReport() platform.NetworkReport {
	ms := time.Millisecond
	return platform.NetworkReport{
		Intervals: []platform.NetworkSample{
			{T: 500 * ms, Interval: 500 * ms, Packets: 1000, Bytes: 64000, CPUCores: 0.3,
				Late:  platform.Lateness{Count: 1000, P50: 20 * time.Microsecond, P99: 300 * time.Microsecond, Max: 400 * time.Microsecond},
				Drops: map[string]uint64{}},
			{T: 1000 * ms, Interval: 500 * ms, Packets: 90000, Bytes: 5760000, CPUCores: 1.3,
				Late:  platform.Lateness{Count: 80000, P50: 2 * ms, P99: 9 * ms, Max: 12 * ms},
				Drops: map[string]uint64{"loss": 10, "read": 400}, Unexplained: 400},
		},
		Links: []platform.NetworkLink{
			{From: "a", To: "b", Packets: 50000, Bytes: 3200000, Drops: map[string]uint64{"loss": 10},
				Late: platform.Lateness{Count: 41000, P50: 2 * ms, P99: 8 * ms, Max: 12 * ms}},
			{From: "b", To: "a", Packets: 41000, Bytes: 2624000,
				Late: platform.Lateness{Count: 40000, P50: 1 * ms, P99: 9 * ms, Max: 11 * ms}},
		},
		Late:        platform.Lateness{Count: 81000, P50: 2 * ms, P99: 8800 * time.Microsecond, Max: 12 * ms},
		Drops:       map[string]uint64{"loss": 10, "read": 400},
		Unexplained: map[string]uint64{"read": 400},
		CPU:         800 * ms, Threads: 3, Realtime: 3,
	}
}

// The runner asks a platform that reports its network after the sampler stopped and before
// the platform goes down, writes network.csv and links.csv, puts the figures and the verdict
// into summary.json, and the report warns on top.
func TestRunnerWritesNetworkReport(t *testing.T) {
	log := &callLog{}
	opts := Options{Out: t.TempDir(), Binary: "/bin/continuum", SampleInterval: 50 * time.Millisecond,
		Platform: reportingProvider{fakeProvider: fakeProvider{log: log}, rep: saturatedReport()}}
	res, err := Execute(context.Background(), writeFakeScenario(t), opts)
	if err != nil {
		t.Fatalf("Execute: %v (calls %q)", err, log.list())
	}
	calls := log.list()
	if n, se, d := slices.Index(calls, "network"), slices.Index(calls, "sample end"), slices.Index(calls, "down"); n < 0 || n < se || n > d {
		t.Errorf("network asked at %d, sampler ended at %d, down at %d: %q", n, se, d, calls)
	}
	rdir := results.RunDir(res.Dir, "001")
	rows, err := results.ReadNetwork(filepath.Join(rdir, results.NetworkFile))
	if err != nil || len(rows) != 2 || rows[1].CPUCores != 1.3 || rows[1].LateP99US != 9000 || rows[1].UnexplainedDrops != 400 ||
		rows[1].DropsByReason["read"] != 400 || rows[1].Drops != 410 {
		t.Errorf("network.csv: %+v, %v", rows, err)
	}
	links, err := results.ReadLinks(filepath.Join(rdir, results.LinksFile))
	if err != nil || len(links) != 2 || links[0].From != "a" || links[0].Packets != 50000 || links[0].DropsByReason["loss"] != 10 {
		t.Errorf("links.csv: %+v, %v", links, err)
	}
	var sum results.Summary
	if err := results.ReadJSON(filepath.Join(res.Dir, results.SummaryFile), &sum); err != nil {
		t.Fatal(err)
	}
	f := sum.Runs[0].Fabric
	if f == nil {
		t.Fatal("summary.json: run 001 has no fabric")
	}
	if !f.Distorted || len(f.Distortion) != 3 || f.LateP99US != 8800 || f.CPUCoresMax != 1.3 || f.UnexplainedDrops != 400 ||
		f.CPUCoresMean != 0.8 || f.Delivered != 81000 || len(f.Links) != 2 {
		t.Errorf("summary.json fabric: %+v", f)
	}
	if m := sum.Runs[0].Metrics["fabric"]; m["late_p99_us"] != 8800 || m["cpu_cores_max"] != 1.3 || m["unexplained_drops"] != 400 {
		t.Errorf("summary.json metrics fabric: %v", m)
	}
	h, _ := os.ReadFile(report.HTMLPath(res.Dir))
	for _, want := range []string{"The testbed distorted this run:", "p99 over the run 8.80 ms &gt; 1 ms", "400 packets dropped that no configured loss explains (read 400)"} {
		if !strings.Contains(string(h), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A platform that does not report its network (its network is real) leaves no network files
// and no fabric in summary.json: not measured, so no verdict either way.
func TestRunnerWithoutNetworkReport(t *testing.T) {
	log := &callLog{}
	opts := Options{Out: t.TempDir(), Binary: "/bin/continuum", Platform: fakeProvider{log: log}, SampleInterval: 50 * time.Millisecond}
	res, err := Execute(context.Background(), writeFakeScenario(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.NetworkFile, results.LinksFile} {
		if _, err := os.Stat(filepath.Join(results.RunDir(res.Dir, "001"), f)); err == nil {
			t.Errorf("%s written for a platform that does not report its network", f)
		}
	}
	var sum results.Summary
	if err := results.ReadJSON(filepath.Join(res.Dir, results.SummaryFile), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Runs[0].Fabric != nil {
		t.Errorf("summary.json has fabric figures: %+v", sum.Runs[0].Fabric)
	}
}

// The nodes' CPU of each sampling round lands beside the fabric's in network.csv's rows (the
// round nearest the interval's end; components' rows are inside their node's and do not count
// again), and with the fabric's, against the host's CPUs, it decides the verdict's host reason.
func TestNetworkResultsHostBusy(t *testing.T) {
	var rep platform.NetworkReport
	var nodes nodesCPU
	for i := 1; i <= 4; i++ {
		end := time.Duration(i) * time.Second
		rep.Intervals = append(rep.Intervals, platform.NetworkSample{T: end, Interval: time.Second, CPUCores: 0.5, Drops: map[string]uint64{}})
		if i == 3 {
			continue // no round near this interval's end
		}
		at := end + 20*time.Millisecond
		nodes.add([]platform.Sample{{T: at, Node: "a", CPUUtil: 0.8}, {T: at, Node: "b", CPUUtil: 0.6}, {T: at, Node: "a", Component: "x", CPUUtil: 0.7}})
	}
	rows, _, f := networkResults(rep, nodes, 2)
	for i, r := range rows {
		if i == 2 {
			if !math.IsNaN(r.NodesCPUCores) {
				t.Errorf("interval 3 without a round: nodes' CPU %v, want NaN", r.NodesCPUCores)
			}
			continue
		}
		if math.Abs(r.NodesCPUCores-1.4) > 1e-9 {
			t.Errorf("interval %d: nodes' CPU %v, want 1.4 (a 0.8 + b 0.6)", i+1, r.NodesCPUCores)
		}
	}
	if f.HostCPUs != 2 || math.Abs(f.HostBusyMax-1.9) > 1e-9 || !f.Distorted || len(f.Distortion) != 1 ||
		!strings.Contains(f.Distortion[0], "used up to 1.90 of the host's 2 CPUs (> 90%) in 3 of the 4 intervals") {
		t.Errorf("on 2 CPUs: host %d, busy max %v, distorted %v %q", f.HostCPUs, f.HostBusyMax, f.Distorted, f.Distortion)
	}
	if _, _, f := networkResults(rep, nodes, 4); f.Distorted {
		t.Errorf("on 4 CPUs (1.9 busy): distorted %q", f.Distortion)
	}
}

// A platform that measured its nodes' CPU itself (a Kubernetes cluster on a testbed: the nodes'
// cgroups hold the cluster's daemons too) decides the nodes' column and the host reason: its
// figure replaces the sum of samples.csv's node rows, which cover only the run's pods.
func TestNetworkResultsNodesCPUFromPlatform(t *testing.T) {
	var rep platform.NetworkReport
	var nodes nodesCPU
	for i := 1; i <= 4; i++ {
		end := time.Duration(i) * time.Second
		s := platform.NetworkSample{T: end, Interval: time.Second, CPUCores: 0.2, Drops: map[string]uint64{}}
		if i != 2 {
			s.NodesCPUCores, s.NodesCPUKnown = 1.7, true
		}
		rep.Intervals = append(rep.Intervals, s)
		nodes.add([]platform.Sample{{T: end, Node: "a", CPUUtil: 0.3}})
	}
	rows, _, f := networkResults(rep, nodes, 2)
	for i, want := range []float64{1.7, 0.3, 1.7, 1.7} {
		if math.Abs(rows[i].NodesCPUCores-want) > 1e-9 {
			t.Errorf("interval %d: nodes' CPU %v, want %v", i+1, rows[i].NodesCPUCores, want)
		}
	}
	if !f.Distorted || len(f.Distortion) != 1 || !strings.Contains(f.Distortion[0], "used up to 1.90 of the host's 2 CPUs (> 90%) in 3 of the 4 intervals") {
		t.Errorf("the cluster's nodes at 1.7 cores and the fabric at 0.2 on 2 CPUs: distorted %v %q", f.Distorted, f.Distortion)
	}
}
