package experiment

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/spec"
)

// sweepRuns is a 2 x 2 sweep (components labelled, rate a scalar) with repeats 2: 8 runs in
// Expand's order, the last path varying fastest.
func sweepRuns() []Run {
	var runs []Run
	for _, comp := range []struct{ value, label string }{{"[{kind: kv}]", "continuum kv"}, {"[{kind: etcd}]", "etcd"}} {
		for _, rate := range []string{"100", "200"} {
			for rep := 1; rep <= 2; rep++ {
				runs = append(runs, Run{
					ID:       fmt.Sprintf("%03d", len(runs)+1),
					Params:   map[string]string{"components": comp.value, "workloads.load.config.rate": rate},
					Labels:   map[string]string{"components": comp.label},
					Repeat:   rep,
					Scenario: &Scenario{Duration: spec.Duration{Duration: 10 * time.Second}},
				})
			}
		}
	}
	return runs
}

func ids(runs []Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func TestSelectionApply(t *testing.T) {
	tests := []struct {
		name    string
		sel     Selection
		want    []string
		wantErr string // substring
	}{
		{"zero selects all", Selection{}, []string{"001", "002", "003", "004", "005", "006", "007", "008"}, ""},
		{"run number", Selection{Run: 3}, []string{"003"}, ""},
		{"label", Selection{Only: "etcd"}, []string{"005", "006", "007", "008"}, ""},
		{"raw value of a labelled path", Selection{Only: "[{kind: etcd}]"}, []string{"005", "006", "007", "008"}, ""},
		{"path=label", Selection{Only: "components=continuum kv"}, []string{"001", "002", "003", "004"}, ""},
		{"last segment=value", Selection{Only: "rate=200"}, []string{"003", "004", "007", "008"}, ""},
		{"two terms: one combination", Selection{Only: "etcd, rate=100"}, []string{"005", "006"}, ""},
		{"only and run", Selection{Only: "etcd", Run: 6}, []string{"006"}, ""},
		{"only and run disagree", Selection{Only: "etcd", Run: 1}, nil, `matches no run`},
		{"run past the end", Selection{Run: 9}, nil, "the scenario has 8 run(s); want 1 to 8"},
		{"negative run", Selection{Run: -1}, nil, "want a run number from 1 to 8"},
		{"unknown value lists the runs", Selection{Only: "redis"}, nil, "--run 5: components=etcd, workloads.load.config.rate=100\n"},
		{"value of another path", Selection{Only: "components=200"}, nil, "matches no run"},
		{"empty term", Selection{Only: "rate="}, nil, `term "rate=" has no value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sel.apply(sweepRuns())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("apply = %v, %v; want error containing %q", ids(got), err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(ids(got), tt.want) {
				t.Fatalf("apply = %v, %v; want %v", ids(got), err, tt.want)
			}
		})
	}
}

func TestSelectionWithoutSweep(t *testing.T) {
	runs := []Run{{ID: "001", Repeat: 1, Scenario: &Scenario{}}}
	if _, err := (Selection{Only: "etcd"}).apply(runs); err == nil || !strings.Contains(err.Error(), "no sweep") {
		t.Errorf("--only on a scenario without a sweep: %v; want an error saying it has no sweep", err)
	}
	if got, err := (Selection{Run: 1}).apply(runs); err != nil || len(got) != 1 {
		t.Errorf("--run 1 without a sweep = %v, %v; want the one run", ids(got), err)
	}
}

func TestWallTime(t *testing.T) {
	runs := sweepRuns()
	if got, want := wallTime(runs), 8*(10*time.Second+RunOverhead); got != want {
		t.Errorf("wallTime = %v, want %v", got, want)
	}
}
