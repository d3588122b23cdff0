package netbench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSelectKeepsBaselines(t *testing.T) {
	all := Cases(false)
	got, err := Select(all, []string{GroupPackets})
	if err != nil {
		t.Fatal(err)
	}
	var packets, baselines int
	for _, c := range got {
		switch {
		case c.Group == GroupPackets:
			packets++
		case c.Group == GroupBaseline && c.For == GroupPackets:
			baselines++
		default:
			t.Errorf("--only packets selected %s", c)
		}
	}
	if packets != len(PacketRates) || baselines != packets {
		t.Errorf("--only packets: %d packets cases and %d baselines, want %d of each", packets, baselines, len(PacketRates))
	}
	if _, err := Select(all, []string{"throughput"}); err == nil ||
		!strings.Contains(err.Error(), `no case group "throughput" (groups: accuracy, jitter, packets, baseline, tcp, bandwidth, loss)`) {
		t.Errorf("an unknown group: %v", err)
	}
	if got, _ := Select(all, nil); len(got) != len(all) {
		t.Errorf("no --only selected %d of %d cases", len(got), len(all))
	}
}

// --quick is a smoke test of every group: each appears, and the whole stays short.
func TestQuickCases(t *testing.T) {
	var groups []string
	var total time.Duration
	for _, c := range Cases(true) {
		if !slices.Contains(groups, c.Group) {
			groups = append(groups, c.Group)
		}
		total += c.Duration
	}
	for _, g := range []string{GroupAccuracy, GroupJitter, GroupPackets, GroupTCP, GroupBandwidth, GroupLoss, GroupBaseline} {
		if !slices.Contains(groups, g) {
			t.Errorf("--quick has no %s case", g)
		}
	}
	if total > 30*time.Second {
		t.Errorf("--quick offers load for %v, want at most 30s", total)
	}
	// Every case a full run judges has its baseline beside it.
	for _, c := range Cases(false) {
		if (c.Group == GroupPackets || c.Group == GroupTCP) && !slices.ContainsFunc(Cases(false), func(b Case) bool {
			return b.Group == GroupBaseline && b.For == c.Group && b.Rate == c.Rate && b.Streams == c.Streams
		}) {
			t.Errorf("%s has no baseline", c)
		}
	}
}
