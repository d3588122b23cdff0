package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store member on each of n1 and n2, a workload on n3, sampled at 0 and 10 s: n3 exchanged
// 20 MB with the store nodes, which also sent each other 30 MB (60 MB counted on both sides).
const samplesCSV = `t_s,node,component,cpu_seconds,cpu_util,rss_bytes,disk_bytes,rx_bytes,tx_bytes,power_w,energy_j,idle_energy_j,rx_packets,tx_packets
0,n1,,0,0,0,0,0,0,0,0,0,0,0
0,n2,,0,0,0,0,0,0,0,0,0,0,0
0,n3,,0,0,0,0,0,0,0,0,0,0,0
0,n1,m1,0,0.2,10485760,1048576,0,0,1,0,0,0,0
0,n2,m2,0,0.4,20971520,0,0,0,1,0,0,0,0
0,n3,load,0,0.9,1048576,0,0,0,1,0,0,0,0
10,n1,,0,0,0,0,20000000,20000000,0,0,0,15000,15000
10,n2,,0,0,0,0,20000000,20000000,0,0,0,15000,15000
10,n3,,0,0,0,0,10000000,10000000,0,0,0,10000,10000
10,n1,m1,3,0.4,31457280,2097152,0,0,1,10,0,0,0
10,n2,m2,4,0.4,10485760,0,0,0,1,20,0,0,0
10,n3,load,9,0.9,1048576,0,0,0,1,90,0,0,0
`

func TestUsagesAndTraffic(t *testing.T) {
	path := filepath.Join(t.TempDir(), SamplesFile)
	if err := os.WriteFile(path, []byte(samplesCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	samples, err := ReadSamples(path)
	if err != nil || len(samples) != 12 {
		t.Fatalf("%d samples, %v", len(samples), err)
	}
	us := Usages(samples, map[string]bool{"load": true})
	if len(us) != 2 {
		t.Fatalf("usages %v: want m1 and m2 only", us)
	}
	m1 := us["m1"]
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !near(m1.CPUPct, 30) || !near(m1.CPUSeconds, 3) || !near(m1.RSSMiB, 30) || !near(m1.DiskMiB, 2) ||
		!near(m1.EnergyJPer30s, 30) || !near(m1.NodeNetMbps, 32) {
		t.Errorf("m1 %+v", m1)
	}
	if f := us["m2"].Fields(); !near(f["cpu_pct"], 40) || !near(f["rss_mib_max"], 20) || !near(f["energy_j_per_30s"], 60) {
		t.Errorf("m2 fields %v", f)
	}
	// (80 MB on the store nodes - 20 MB on n3) / 2 = 30 MB in 10 s = 24 Mbit/s.
	if v, ok := ComponentsOnlyTraffic(samples, map[string]bool{"load": true}); !ok || !near(v, 24) {
		t.Errorf("components-only traffic %v (%v), want 24 Mbit/s", v, ok)
	}
	// 40000 packets and 50 MB sent in 10 s.
	if pps, mbps, ok := FabricLoad(samples); !ok || !near(pps, 4000) || !near(mbps, 40) {
		t.Errorf("fabric load %v packets/s %v Mbit/s (%v), want 4000 and 40", pps, mbps, ok)
	}
	// A workload on a store node: the store's own traffic cannot be told apart.
	probe := append(samples, Sample{T: 10, Node: "n1", Component: "probe"})
	if _, ok := ComponentsOnlyTraffic(probe, map[string]bool{"load": true, "probe": true}); ok {
		t.Error("components-only traffic computed with a workload on a component's node")
	}
}

// TestReadSamplesWithoutPackets: results written before the packet columns read as 0 packets.
func TestReadSamplesWithoutPackets(t *testing.T) {
	path := filepath.Join(t.TempDir(), SamplesFile)
	old := "t_s,node,component,cpu_seconds,cpu_util,rss_bytes,disk_bytes,rx_bytes,tx_bytes,power_w,energy_j,idle_energy_j\n" +
		"0,n1,,0,0,0,0,0,0,0,0,0\n1,n1,,1,1,0,0,5,5,0,0,0\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	samples, err := ReadSamples(path)
	if err != nil || len(samples) != 2 || samples[1].TxBytes != 5 || samples[1].TxPackets != 0 {
		t.Fatalf("%+v, %v", samples, err)
	}
	if _, _, ok := FabricLoad(samples); ok {
		t.Error("a fabric load from samples without packet counts")
	}
}

func TestReadSamplesErrors(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"no column":    "t_s,component\n0,db\n",
		"not a number": strings.Replace(samplesCSV, "0,n1,m1,0,0.2", "0,n1,m1,0,busy", 1),
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSamples(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}
