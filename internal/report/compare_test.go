package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/results"
)

// The summary compares: a row per metric that matters and a column per combination, not a list
// per combination. Series without a request anywhere and role counters that are 0 everywhere
// (a consumer's "published") are left out of the comparison and the full list; error counters
// stay; a series named like its workload is not named twice; many combinations are split into
// tables no wider than maxCompareCols.
func TestSummaryComparesCombinations(t *testing.T) {
	var groups []results.Group
	for i, store := range []string{"continuum kv", "etcd", "redis", "a", "b", "c", "d"} {
		groups = append(groups, results.Group{
			Params: results.Params{"components": fmt.Sprintf("[%d]", i)}, Labels: map[string]string{"components": store},
			Runs: []string{fmt.Sprintf("%03d", i+1)},
			Metrics: map[string]map[string]results.Aggregate{
				"ycsb/all/latency_ms":     {"count": results.One(100), "p50": results.One(float64(i + 1)), "p99": results.One(10)},
				"ycsb/all/throughput_rps": {"value": results.One(1000)},
				"ycsb/all/errors":         {"value": results.One(0)},
				"lag/lag/latency_ms":      {"count": results.One(10), "p50": results.One(3), "p99": results.One(30)},
				"lag/lag/errors":          {"value": results.One(0)},
				"pace/c1/latency_ms":      {"count": results.One(0)}, // a series that never sent
				"pace/c1/errors":          {"value": results.One(0)},
				"pace/c1":                 {"published": results.One(0), "processed": results.One(50)},
				"resources":               {"cpu_pct": results.One(40), "rss_mib": results.One(120)},
			},
		})
	}
	s := results.Summary{Groups: groups}
	tables := compareTables(s)
	if len(tables) != 2 || len(tables[0].Columns) != maxCompareCols || len(tables[1].Columns) != 1 {
		t.Fatalf("7 combinations: got %d tables, want 2 (6 + 1 columns)", len(tables))
	}
	if got := tables[0].Columns[1].Name; got != "etcd" || tables[0].Params[0] != "components" {
		t.Errorf("column named %q, want the swept parameter's label", got)
	}
	var rows []string
	for _, r := range tables[0].Rows {
		rows = append(rows, r.Metric)
		if len(r.Cells) != maxCompareCols {
			t.Errorf("row %q has %d cells, want one per column", r.Metric, len(r.Cells))
		}
	}
	for _, want := range []string{"ycsb/all p50 (ms)", "ycsb/all p99 (ms)", "ycsb/all throughput (req/s)", "ycsb/all errors",
		"lag p50 (ms)", "system under test: CPU (% of a core)"} {
		if !slices.Contains(rows, want) {
			t.Errorf("comparison lacks the row %q (rows %q)", want, rows)
		}
	}
	for _, r := range rows {
		if strings.Contains(r, "lag/lag") || strings.Contains(r, "pace/c1") {
			t.Errorf("comparison has the row %q", r)
		}
	}
	if got := tables[0].Rows[0].Cells[2]; got != "3" {
		t.Errorf("first row, third column = %q, want redis's p50 3", got)
	}

	full := summaryTables(s)
	var values []string
	for _, r := range full[0].Values {
		values = append(values, r.Metric)
	}
	if slices.Contains(values, "pace/c1 published") {
		t.Errorf("full list keeps a counter that is 0 in every combination: %q", values)
	}
	for _, want := range []string{"pace/c1 processed", "ycsb/all/errors", "pace/c1/errors"} {
		if !slices.Contains(values, want) {
			t.Errorf("full list lacks %q: %q", want, values)
		}
	}
}
