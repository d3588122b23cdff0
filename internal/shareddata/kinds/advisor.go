package kinds

import (
	"fmt"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/report/chart"
)

// The maintenance advisor: from a run that swept the maintenance period τ, it
// recommends per traffic class (per combination of the other swept parameters) the τ that
// costs the store's instances the least CPU while every defragmentation kept its downtime
// within a bound and the database before compaction stayed within half of etcd's default
// 2 GiB quota, and says why.
const (
	adviceDowntimeMS = 100
	adviceDiskMiB    = 1024
)

// tauOption is one maintenance period's runs within a combination of the other swept
// parameters: the longest period, downtime and database size its maintained members reported,
// and its store instances' total CPU.
type tauOption struct {
	label               string
	period, down, db    float64
	cpu                 float64
	hasCPU, maintenance bool
}

// byTau groups the combinations by everything but the swept maintenance period (the "class"
// key, in first-seen order) and returns each one's periods; ok is false when no swept
// parameter is a maintenance period or no member was maintained.
func byTau(groups []npmGroup, swept []string) (classes []string, opts map[string][]tauOption, ok bool) {
	if len(report.MetricSuffixes(groups, "maintenance/")) == 0 {
		return nil, nil, false
	}
	tau := tauParam(groups, swept)
	if tau < 0 {
		return nil, nil, false
	}
	opts = map[string][]tauOption{}
	for _, g := range groups {
		key := strings.Join(paramsWithout(g, tau), ", ")
		if _, ok := opts[key]; !ok {
			classes = append(classes, key)
		}
		o := tauOption{label: g.Params[tau]}
		for name, m := range g.Metrics {
			if strings.HasPrefix(name, "maintenance/") {
				o.maintenance = true
				o.period = max(o.period, m["period_s"].Mean)
				o.down = max(o.down, m["downtime_ms_max"].Mean)
				o.db = max(o.db, m["db_before_mib_max"].Mean)
			}
		}
		if gu, _, ok := groupUsage(g); ok {
			o.cpu, o.hasCPU = gu.cpuPct, true
		}
		opts[key] = append(opts[key], o)
	}
	return classes, opts, true
}

// paramsWithout is g's swept parameter labels, the i-th left out.
func paramsWithout(g npmGroup, i int) []string {
	return append(append([]string{}, g.Params[:i]...), g.Params[i+1:]...)
}

// tauParam is the index of the swept parameter that sets the maintenance period: one named
// *.config.period, or else one (such as a whole workloads list) whose values, with every other
// parameter fixed, each give the maintained members a different period. -1: none.
func tauParam(groups []npmGroup, swept []string) int {
	for i, p := range swept {
		if strings.HasSuffix(p, ".config.period") {
			return i
		}
	}
	period := func(g npmGroup) (float64, bool) {
		for name, m := range g.Metrics {
			if strings.HasPrefix(name, "maintenance/") {
				return m["period_s"].Mean, true
			}
		}
		return 0, false
	}
	for i := range swept {
		seen := map[string]map[float64]int{} // the other parameters -> period -> combinations
		ok := true
		for _, g := range groups {
			p, has := period(g)
			if !has {
				ok = false
				break
			}
			key := strings.Join(paramsWithout(g, i), "\x00")
			if seen[key] == nil {
				seen[key] = map[float64]int{}
			}
			seen[key][p]++
		}
		for _, periods := range seen {
			for _, n := range periods {
				ok = ok && n == 1
			}
			ok = ok && len(periods) > 1
		}
		if ok && len(seen) > 0 {
			return i
		}
	}
	return -1
}

// cpuSplitTable splits the store's CPU per combination into reads/writes and maintenance
// (seeds/000 Fig. 7): reads and writes are what the same combination used with maintenance off
// (the probe alone), maintenance is what a period τ added to that. It needs a τ-off run per
// combination.
func cpuSplitTable(groups []npmGroup, swept []string) (report.Table, bool) {
	classes, byClass, ok := byTau(groups, swept)
	if !ok {
		return report.Table{}, false
	}
	t := report.Table{Class: "npm-cpu-split", Columns: []report.Column{{Header: "combination"}, {Header: "τ"},
		{Header: "CPU total (%)", Numeric: true}, {Header: "reads/writes (%)", Numeric: true}, {Header: "maintenance (%)", Numeric: true},
		{Header: "maintenance share (%)", Numeric: true}}}
	for _, class := range classes {
		var off *tauOption
		for i, o := range byClass[class] {
			if o.maintenance && o.period == 0 && o.hasCPU {
				off = &byClass[class][i]
			}
		}
		if off == nil {
			continue
		}
		for _, o := range byClass[class] {
			if !o.hasCPU || o.period == 0 {
				continue
			}
			m := o.cpu - off.cpu
			share := ""
			if o.cpu > 0 {
				share = fmtF(m / o.cpu * 100)
			}
			t.Rows = append(t.Rows, []string{class, o.label, fmtF(o.cpu), fmtF(off.cpu), fmtF(m), share})
		}
	}
	return t, len(t.Rows) > 0
}

// advisorTable returns the advice, or false when no swept parameter is a maintenance period.
func advisorTable(groups []npmGroup, swept []string) (report.Table, string, bool) {
	classes, byClass, ok := byTau(groups, swept)
	if !ok {
		return report.Table{}, "", false
	}
	t := report.Table{Class: "npm-advice", Columns: []report.Column{{Header: "combination"}, {Header: "recommended τ"},
		{Header: "CPU (%)", Numeric: true}, {Header: "downtime max (ms)", Numeric: true}, {Header: "db before compaction (MiB)", Numeric: true},
		{Header: "why"}}}
	for _, class := range classes {
		opts := byClass[class]
		var ok []tauOption
		var reasons []string
		for _, o := range opts {
			switch {
			case !o.maintenance || o.period <= 0 || !o.hasCPU:
			case o.down > adviceDowntimeMS:
				reasons = append(reasons, fmt.Sprintf("%s: downtime %s ms", o.label, chart.FormatNum(o.down)))
			case o.db > adviceDiskMiB:
				reasons = append(reasons, fmt.Sprintf("%s: %s MiB before compaction", o.label, chart.FormatNum(o.db)))
			default:
				ok = append(ok, o)
			}
		}
		if len(ok) == 0 {
			t.Rows = append(t.Rows, []string{class, "none", "", "", "", "no τ kept downtime ≤ 100 ms and the database ≤ 1 GiB (" + strings.Join(reasons, "; ") + ")"})
			continue
		}
		sort.SliceStable(ok, func(i, j int) bool { return ok[i].cpu < ok[j].cpu })
		best := ok[0]
		why := fmt.Sprintf("least CPU of the %d τ within the bounds", len(ok))
		if len(ok) > 1 {
			why += fmt.Sprintf(" (next: %s at %s%%)", ok[1].label, fmtF(ok[1].cpu))
		}
		if len(reasons) > 0 {
			why += "; excluded " + strings.Join(reasons, "; ")
		}
		t.Rows = append(t.Rows, []string{class, best.label, fmtF(best.cpu), chart.FormatNum(best.down), fmtF(best.db), why})
	}
	note := fmt.Sprintf("Maintenance advice: per combination, the τ whose runs used the least CPU in the store's instances among those whose every defragmentation kept the downtime ≤ %d ms and whose database before compaction stayed ≤ %d MiB (half of etcd's default 2 GiB quota). With one repeat, CPU differences of a few %% are within noise.", adviceDowntimeMS, adviceDiskMiB)
	return t, note, true
}
