package flbench

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestQuickRun(t *testing.T) {
	cfg := DefaultConfig(true)
	cfg.Clients, cfg.RatioPerShape = []int{12, 40, 1200}, 3
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Timings) != 3*4 || len(res.Ratios) != 2 {
		t.Fatalf("%d timings, %d ratios", len(res.Timings), len(res.Ratios))
	}
	exactRan := false
	for _, x := range res.Timings {
		if x.What == "min-kld exact" && x.Clients == 12 {
			exactRan = x.Skipped == "" && len(x.Seconds) == 1
		}
		if x.What == "min-kld exact" && x.Clients == 40 && x.Skipped == "" {
			t.Error("exact ran at n = 40")
		}
	}
	if !exactRan {
		t.Error("exact did not run at n = 12, k = 4")
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("the result must marshal to JSON: %v", err)
	}
	md := Markdown(res)
	for _, want := range []string{"## Runtime", "min-kld heuristic", "## Heuristic / exact mean KLD", "within 1.10x"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}
