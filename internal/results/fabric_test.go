package results

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDistortion(t *testing.T) {
	calm := []NetworkRow{{T: 1, IntervalS: 1, CPUCores: 0.05}, {T: 2, IntervalS: 1, CPUCores: 0.1}}
	busy := func(cores ...float64) []NetworkRow {
		var rows []NetworkRow
		for i, c := range cores {
			rows = append(rows, NetworkRow{T: float64(i+1) * 2, IntervalS: 2, CPUCores: c})
		}
		return rows
	}
	host := func(busy ...float64) []NetworkRow { // the fabric at 0.1 cores, the nodes the rest
		var rows []NetworkRow
		for i, b := range busy {
			rows = append(rows, NetworkRow{T: float64(i+1) * 2, IntervalS: 2, CPUCores: 0.1, NodesCPUCores: b - 0.1})
		}
		return rows
	}
	cases := []struct {
		name      string
		f         Fabric
		intervals []NetworkRow
		want      []string // each reason must contain its string, in order; nil: not distorted
	}{
		{name: "quiet run", f: Fabric{Delivered: 3000, LateP99US: 120, LateMaxUS: 4000}, intervals: calm},
		{name: "no traffic", intervals: calm},
		{name: "p99 at the limit is not over it", f: Fabric{Delivered: 5000, LateP99US: 1000, LateMaxUS: 2000}, intervals: calm},
		{name: "p99 over 1 ms", f: Fabric{Delivered: 5000, LateP99US: 1800, LateMaxUS: 3200}, intervals: calm,
			want: []string{"the fabric delivered packets up to 3.20 ms late (p99 over the run 1.80 ms > 1 ms)"}},
		{name: "few packets: a late p99 alone does not count", f: Fabric{Delivered: 999, LateP99US: 3000, LateMaxUS: 4900}, intervals: calm},
		{name: "few packets: the maximum decides", f: Fabric{Delivered: 420, LateP99US: 900, LateMaxUS: 7100}, intervals: calm,
			want: []string{"a packet 7.10 ms late (> 5 ms; with 420 packets delivered"}},
		{name: "enough packets: a late maximum alone does not count", f: Fabric{Delivered: 1000, LateP99US: 300, LateMaxUS: 50000}, intervals: calm},
		{name: "CPU over 0.9 in one interval", f: Fabric{Delivered: 5000, LateP99US: 100}, intervals: busy(0.2, 0.95, 0.3),
			want: []string{"the fabric used 0.95 cores (> 0.9) from 2 s to 4 s"}},
		{name: "CPU at 0.9 is not over it", intervals: busy(0.9, 0.9)},
		{name: "CPU over in a span with a gap", intervals: busy(0.97, 0.5, 1.2, 0.1),
			want: []string{"the fabric used up to 1.20 cores (> 0.9) in 2 of the 3 intervals from 0 s to 6 s"}},
		{name: "unexplained drops, largest first", f: Fabric{Delivered: 100, UnexplainedDrops: 412,
			Unexplained: map[string]uint64{"write": 12, "read": 400}, Drops: map[string]uint64{"loss": 30, "write": 12, "read": 400}},
			intervals: calm, want: []string{"412 packets dropped that no configured loss explains (read 400, write 12)"}},
		{name: "host busy in 3 intervals", f: Fabric{HostCPUs: 2}, intervals: host(1.9, 1.85, 1.2, 1.95),
			want: []string{"the nodes and the fabric used up to 1.95 of the host's 2 CPUs (> 90%) in 3 of the 4 intervals from 0 s to 8 s"}},
		{name: "host busy in only 2 intervals", f: Fabric{HostCPUs: 2}, intervals: host(1.9, 1.85, 1.2)},
		{name: "host at 90% is not over it", f: Fabric{HostCPUs: 2}, intervals: host(1.8, 1.8, 1.8)},
		{name: "host's CPUs unknown", intervals: host(1.9, 1.9, 1.9)},
		{name: "no nodes' column: the fabric alone", f: Fabric{HostCPUs: 1}, intervals: []NetworkRow{
			{T: 1, IntervalS: 1, CPUCores: 0.95, NodesCPUCores: math.NaN()}, {T: 2, IntervalS: 1, CPUCores: 0.95, NodesCPUCores: math.NaN()},
			{T: 3, IntervalS: 1, CPUCores: 0.95, NodesCPUCores: math.NaN()}},
			want: []string{"the fabric used up to 0.95 cores", "used up to 0.95 of the host's 1 CPUs"}},
		{name: "everything at once", f: Fabric{Delivered: 200000, LateP99US: 163000, LateMaxUS: 240000, UnexplainedDrops: 3,
			Unexplained: map[string]uint64{"read": 3}}, intervals: busy(1.4),
			want: []string{"up to 240 ms late (p99 over the run 163 ms > 1 ms)", "used 1.40 cores (> 0.9) from 0 s to 2 s", "3 packets dropped"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Distortion(c.f, c.intervals)
			if len(got) != len(c.want) {
				t.Fatalf("Distortion = %q, want %d reasons like %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("reason %d = %q, want it to contain %q", i, got[i], w)
				}
			}
			if again := Distortion(c.f, c.intervals); !reflect.DeepEqual(again, got) {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
		})
	}
}

func TestNetworkAndLinksRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rows := []NetworkRow{
		{T: 1, IntervalS: 1, Packets: 100, Bytes: 6400, CPUCores: 0.25, Delivered: 100, LateP50US: 3, LateP99US: 40, LateMaxUS: 52,
			ReadLagP99US: 8, DropsByReason: map[string]float64{}},
		{T: 2, IntervalS: 1, Packets: 250, Bytes: 16000, CPUCores: 0.5, Delivered: 150, LateP50US: 4, LateP99US: 1200, LateMaxUS: 1300,
			ReadLagP99US: 900, Drops: 7, UnexplainedDrops: 2, DropsByReason: map[string]float64{"loss": 5, "read": 2}, NodesCPUCores: 1.25},
	}
	links := []LinkRow{{From: "a", To: "b", Packets: 130, Bytes: 8320, Delivered: 130, LateP50US: 4, LateP99US: 900, LateMaxUS: 1300,
		Drops: 3, DropsByReason: map[string]float64{"loss": 3}}, {From: "b", To: "a", DropsByReason: map[string]float64{}}}
	np, lp := filepath.Join(dir, NetworkFile), filepath.Join(dir, LinksFile)
	if err := WriteNetwork(np, rows); err != nil {
		t.Fatal(err)
	}
	if err := WriteLinks(lp, links); err != nil {
		t.Fatal(err)
	}
	gotRows, err := ReadNetwork(np)
	if err != nil || !reflect.DeepEqual(gotRows, rows) {
		t.Errorf("network.csv round trip: %+v, %v\nwant %+v", gotRows, err, rows)
	}
	gotLinks, err := ReadLinks(lp)
	if err != nil || !reflect.DeepEqual(gotLinks, links) {
		t.Errorf("links.csv round trip: %+v, %v\nwant %+v", gotLinks, err, links)
	}
	b, _ := os.ReadFile(np)
	if !strings.Contains(string(b), "loss=5 read=2") {
		t.Errorf("network.csv does not write drops as reason=count:\n%s", b)
	}
	bad := filepath.Join(dir, "bad.csv")
	_ = os.WriteFile(bad, []byte("from,to,packets,drops_by_reason\na,b,1,loss:3\n"), 0o644)
	if _, err := ReadLinks(bad); err == nil || !strings.Contains(err.Error(), "bad.csv:2") || !strings.Contains(err.Error(), "reason=count") {
		t.Errorf("bad drops cell: %v, want an error naming file:line and the form", err)
	}
}
