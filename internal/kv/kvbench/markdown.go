package kvbench

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

// Markdown renders a benchmark for docs/benchmarks/: the kit's header (command, machine,
// commit, date, load), the configuration, tables, the result against issues 3 and 13's goals,
// and the raw JSON.
func Markdown(res *Result) string {
	cfg := res.Config
	var loads []float64
	for _, sr := range res.Stores {
		loads = append(loads, sr.LoadAvg[0], sr.LoadAvg[1])
	}
	d := benchkit.NewDoc("continuum kv vs etcd vs Redis on one node (YCSB)", res.Header, loads...)
	p := d.P
	items := []string{
		fmt.Sprintf("Workload: YCSB %s, %d records of %d field(s) x %d B, request distribution as in YCSB's workload file; load phase with %d closed-loop clients",
			strings.ToUpper(cfg.Workload), res.Records, cfg.FieldCount, cfg.FieldLength, cfg.LoadClients),
		fmt.Sprintf("Open-loop sweep: %s ops/s, %v per step (first %v excluded), latency from the intended send time; a rate is *sustained* when throughput >= 95%% of it, no request fails and every operation's p99 <= %v. The sweep stops at the first rate not sustained.",
			joinRates(cfg.Rates), cfg.StepDuration, cfg.Warmup, cfg.P99Limit),
		fmt.Sprintf("The sweep always reaches %.0f ops/s (the goals compare p50 there), even past an unsustained rate; the highest sustained rate is the highest with every rate up to it sustained.", cfg.SweepAtLeast),
		fmt.Sprintf("After the load phase the benchmark waits %v (memory and disk are read then), and the first step starts: there is no other warm-up, and that step counts toward every verdict (a store still compacting its bulk load shows it there).", cfg.Settle),
	}
	if cfg.Maintenance {
		items = append(items, "**Maintenance during every step**: a third of the way into the measured part of each step, the benchmark compacts the store's history up to its current revision (physical) and then defragments it, through etcd's maintenance API, as an operator's schedule would (kv and etcd; Redis runs its steps without). The step's latencies include both; the sweep table gives their durations.")
	}
	durability := fmt.Sprintf("Durability: etcd with its defaults (fsync of WAL before acknowledging); continuum kv with its default (group commit, fsync before acknowledging); Redis with AOF `appendfsync %s`", cfg.RedisFsync)
	if cfg.RedisFsync == "everysec" {
		durability += " — **the weaker baseline**: it acknowledges before the fsync and can lose up to ~1 s of acknowledged writes"
	}
	items = append(items,
		fmt.Sprintf("Closed loop: %d clients for %v (peak throughput).", cfg.ClosedClients, cfg.ClosedDuration),
		"Same machine, same run, one store at a time; the load generator runs in the same process as the benchmark and shares the CPUs with the server.",
		durability+".")
	d.List(items...)

	for _, sr := range res.Stores {
		if sr.Error != "" {
			d.Para("**%s not measured**: %s", sr.Store, benchkit.OneLine(sr.Error, 300))
		}
	}

	d.Section("Rate sweep (open loop): p50 / p99 in ms per operation")
	ops := opNames(res)
	cols, align := []string{"store", "rep", "target ops/s", "achieved ops/s"}, "lrrr"
	for _, op := range ops {
		cols, align = append(cols, op+" p50", op+" p99"), align+"rr"
	}
	cols, align = append(cols, "errors", "sustained"), align+"rc"
	if cfg.Maintenance {
		cols, align = append(cols, "compact / defrag ms"), align+"l"
	}
	t := benchkit.NewTable(align, cols...)
	for _, sr := range res.Stores {
		for _, s := range sr.Sweep {
			row := []string{sr.Store, fmt.Sprint(sr.Repeat), fmt.Sprintf("%.0f", s.Rate), fmt.Sprintf("%.0f", s.ThroughputRPS)}
			for _, op := range ops {
				o := s.Ops[op]
				row = append(row, fmt.Sprintf("%.2f", o.P50), fmt.Sprintf("%.2f", o.P99))
			}
			row = append(row, fmt.Sprintf("%d%s", s.Errors, errTypes(s)), benchkit.YesNo(s.Sustained))
			if cfg.Maintenance {
				switch m := s.Maintenance; {
				case m == nil:
					row = append(row, "")
				case m.Error != "":
					row = append(row, "failed: "+benchkit.OneLine(m.Error, 300))
				default:
					row = append(row, fmt.Sprintf("%.1f / %.1f", m.CompactMs, m.DefragMs))
				}
			}
			t.Row(row...)
		}
	}
	d.Table(t)
	d.Section("Summary per store")
	t = benchkit.NewTable("lrlrrlrrrrl", "store", "rep", "version", fmt.Sprintf("highest sustained rate (p99 <= %v)", cfg.P99Limit),
		fmt.Sprintf("closed loop (%d clients) ops/s", cfg.ClosedClients), "closed-loop p50 / p99 ms", "load phase inserts/s", "RSS loaded",
		"RSS per 1M keys", "disk per 1M keys", "host load avg (start / end)")
	for _, sr := range res.Stores {
		if sr.Error != "" {
			t.Row(sr.Store, fmt.Sprint(sr.Repeat), sr.Version, "not measured")
			continue
		}
		closed, lat := "", ""
		if sr.Closed != nil {
			closed = fmt.Sprintf("%.0f", sr.Closed.ThroughputRPS)
			var parts []string
			for _, op := range ops {
				if o, ok := sr.Closed.Ops[op]; ok {
					parts = append(parts, fmt.Sprintf("%s %.2f / %.2f", op, o.P50, o.P99))
				}
			}
			lat = strings.Join(parts, "; ")
		}
		t.Row(sr.Store, fmt.Sprint(sr.Repeat), sr.Version, rateOrNone(sr.MaxSustained), closed, lat, fmt.Sprintf("%.0f", sr.LoadInsertsPS),
			benchkit.MiB(sr.RSSLoaded), benchkit.MiB(sr.RSSPerMillion), benchkit.MiB(sr.DiskPerMillion), fmt.Sprintf("%.2f / %.2f", sr.LoadAvg[0], sr.LoadAvg[1]))
	}
	d.Table(t)
	if cfg.FootprintRecords > res.Records {
		p("RSS and disk per 1M keys are the growth from the empty server to one holding %d keys: after the runs above, the benchmark inserts records (same key and value shape) until the store holds that many, waits %v, and reads RSS and the data directory's allocated blocks; the figure is scaled to 10^6 keys. Measuring at that size, not extrapolating from the %d loaded records, keeps fixed costs (a Go heap-goal floor, preallocated log segments) from being multiplied as if they grew with the keys. \"RSS loaded\" is the RSS with the %d records, during the runs. etcd preallocates 64 MiB WAL segments, which the empty baseline already holds.",
			cfg.FootprintRecords, cfg.Settle, res.Records, res.Records)
	} else {
		p("RSS and disk per 1M keys are the growth from the empty server to the loaded one (after a %v settle), scaled from %d records to 10^6; disk is allocated blocks of the data directory (etcd preallocates 64 MiB WAL segments, which the empty baseline already holds).",
			cfg.Settle, res.Records)
	}
	p(" Redis's figure includes the sorted-set index scans use. The host load average shows what else ran on the machine: with 2 CPUs, a load above ~1.5 beyond the benchmark itself means the server and load generator were competing for CPU, which shows up first in p99.\n\n")

	if hasCost(res) {
		d.Section("Server cost per request (closed loop)")
		d.Para("Read from the server process around the closed-loop run: its CPU time (user + system, /proc) and, for the Go servers, its heap allocations (go_memstats_mallocs_total and go_memstats_alloc_bytes_total from its /metrics), divided by the requests it served. The load generator's costs are not in these figures. For kv, the storage engine's writes over the whole store run (load, sweep and closed loop): write amplification is (WAL + flushed + compacted) / WAL, as Pebble defines it.")
		t := benchkit.NewTable("lrrrrrrrrr", "store", "rep", "CPU µs / request", "allocations / request", "allocated bytes / request",
			"WAL MiB", "flushed MiB", "compacted MiB", "compactions", "write amplification")
		for _, sr := range res.Stores {
			if sr.Cost == nil {
				continue
			}
			allocs, bytes := "", ""
			if sr.Cost.Allocs > 0 {
				allocs, bytes = fmt.Sprintf("%.1f", sr.Cost.Allocs), fmt.Sprintf("%.0f", sr.Cost.AllocBytes)
			}
			var io [5]string
			if st := sr.Storage; st != nil {
				io = [5]string{mibs(st.WALBytes), mibs(st.FlushedBytes), mibs(st.CompactedBytes), fmt.Sprintf("%.0f", st.Compactions), fmt.Sprintf("%.2f", st.WriteAmp)}
			}
			t.Row(sr.Store, fmt.Sprint(sr.Repeat), fmt.Sprintf("%.1f", sr.Cost.CPUMicros), allocs, bytes, io[0], io[1], io[2], io[3], io[4])
		}
		d.Table(t)
	}
	if cfg.Repeats > 1 {
		d.Section("Across repeats")
		d.Para("Each store was measured %d times, the stores interleaved (%s, then again). Rates are compared repeat by repeat; the other verdicts use the median (the range over the repeats in parentheses).", cfg.Repeats, strings.Join(cfg.Stores, ", "))
		t := benchkit.NewTable("llrlr", "store", "highest sustained rate per repeat", "median", "closed-loop ops/s per repeat", "median")
		for _, store := range cfg.Stores {
			srs := measured(res, store)
			if len(srs) == 0 {
				continue
			}
			closed := benchkit.Summarize(benchkit.Values(srs, closedRate))
			var cl []string
			for _, sr := range srs {
				if v, ok := closedRate(sr); ok {
					cl = append(cl, fmt.Sprintf("%.0f", v))
				}
			}
			t.Row(store, ratesOf(srs), rateOrNone(medianOf(srs, maxSustained)), strings.Join(cl, ", "), closed.Format("%.0f"))
		}
		d.Table(t)
	}
	gs := res.Goals
	if gs == nil {
		gs = goals(res)
	}
	d.Goals("Against the goals (issues 3 and 13)", gs)
	d.RawJSON(res)
	return d.String()
}

func closedRate(sr *StoreResult) (float64, bool) {
	if sr.Closed == nil {
		return 0, false
	}
	return sr.Closed.ThroughputRPS, true
}

// goals states each goal's verdict from what was measured, over every repeat; unmeasured stores
// say so. Rates compare repeat by repeat (the stores of one repeat ran back to back); other
// figures compare medians across repeats.
func goals(res *Result) []benchkit.Goal {
	kv, etcd, redis := measured(res, kvtarget.KindKV), measured(res, kvtarget.KindEtcd), measured(res, kvtarget.KindRedis)
	var out []benchkit.Goal
	out = append(out, rateGoal(res, kv, etcd))
	out = append(out, tailGoal(kv, res.Config.Maintenance))
	const p50What = "kv p50 at 5k/s <= etcd's"
	if len(kv) > 0 && len(etcd) > 0 {
		out = append(out, closedGoal(kv, etcd))
		var parts []string
		ok, evaluated := true, true
		for _, op := range opNames(res) {
			k, e := medianOf(kv, func(sr *StoreResult) (float64, bool) { return p50At(sr, 5000, op) }),
				medianOf(etcd, func(sr *StoreResult) (float64, bool) { return p50At(sr, 5000, op) })
			if math.IsNaN(k) || math.IsNaN(e) {
				evaluated = false
				continue
			}
			parts = append(parts, fmt.Sprintf("%s kv %.2f ms vs etcd %.2f ms", op, k, e))
			ok = ok && k <= e
		}
		if !evaluated || len(parts) == 0 {
			out = append(out, benchkit.Skip(p50What, "5000 ops/s not in both sweeps"))
		} else {
			out = append(out, benchkit.Check(p50What+medianNote(kv), ok, strings.Join(parts, "; ")))
		}
	} else {
		out = append(out, benchkit.Skip(p50What, "kv and etcd must both be measured"))
	}
	out = append(out, cpuGoal(kv, etcd))
	if w, _ := res.Config.workload(); w.FieldCount*w.FieldLength >= largeValue {
		out = append(out, largeGoal(res, kv, etcd, w.FieldCount*w.FieldLength))
	}
	const stretch = "stretch: kv within 1.5x of Redis's rate"
	if len(kv) > 0 && len(redis) > 0 {
		k, r := medianOf(kv, maxSustained), medianOf(redis, maxSustained)
		out = append(out, benchkit.Check(stretch+medianNote(kv), k*1.5 >= r, fmt.Sprintf("kv %s, Redis %s", rateOrNone(k), rateOrNone(r))))
	} else {
		out = append(out, benchkit.Skip(stretch, "kv and Redis must both be measured"))
	}
	if len(kv) > 0 && len(etcd) > 0 {
		rss := func(sr *StoreResult) (float64, bool) { return sr.RSSPerMillion, sr.RSSPerMillion > 0 }
		disk := func(sr *StoreResult) (float64, bool) { return sr.DiskPerMillion, sr.DiskPerMillion > 0 }
		kr, er, kd, ed := medianOf(kv, rss), medianOf(etcd, rss), medianOf(kv, disk), medianOf(etcd, disk)
		switch {
		case math.IsNaN(er) || math.IsNaN(ed) || er <= 0 || ed <= 0:
		case res.Config.FootprintRecords <= res.Records:
			// Without a footprint phase the per-million figures are scaled from the loaded
			// records, fixed costs (a heap-goal floor, preallocated logs) multiplied with
			// them: state what the loaded records took instead.
			f := float64(res.Records) / 1e6
			out = append(out, benchkit.Report(fmt.Sprintf("memory for the %d loaded records%s", res.Records, medianNote(kv)),
				fmt.Sprintf("kv %s vs etcd %s (%.2fx); disk: kv %s vs etcd %s (%.2fx)", benchkit.MiB(kr*f), benchkit.MiB(er*f), kr/er, benchkit.MiB(kd*f), benchkit.MiB(ed*f), kd/ed)))
		default:
			out = append(out, benchkit.Report("memory per 1M keys"+medianNote(kv),
				fmt.Sprintf("kv %s vs etcd %s (%.2fx); disk per 1M keys: kv %s vs etcd %s (%.2fx)", benchkit.MiB(kr), benchkit.MiB(er), kr/er, benchkit.MiB(kd), benchkit.MiB(ed), kd/ed)))
		}
	}
	return out
}

// rateGoal: kv's highest sustained rate is at least 3x etcd's, in every repeat.
func rateGoal(res *Result, kv, etcd []*StoreResult) benchkit.Goal {
	const what = "kv >= 3x etcd's highest rate with p99 <= 10 ms"
	if len(kv) == 0 || len(etcd) == 0 {
		return benchkit.Skip(what, "kv and etcd must both be measured in the same run")
	}
	var ratios []string
	met, undetermined := true, false
	pairs := 0
	top := res.Config.Rates[len(res.Config.Rates)-1]
	for _, k := range kv {
		e := repeatOf(etcd, k.Repeat)
		if e == nil {
			continue
		}
		pairs++
		switch {
		case e.MaxSustained == 0 && k.MaxSustained == 0:
			ratios = append(ratios, "neither sustains the lowest rate")
			met = false
		case e.MaxSustained == 0:
			ratios = append(ratios, "etcd sustains none")
			undetermined = true
		default:
			r := k.MaxSustained / e.MaxSustained
			ratios = append(ratios, fmt.Sprintf("%.2fx", r))
			if r < 3 && k.MaxSustained >= top {
				// kv sustained the whole sweep: its highest rate is above the sweep, unknown.
				undetermined = true
				ratios[len(ratios)-1] += " (kv sustained the whole sweep)"
				continue
			}
			met = met && r >= 3
		}
	}
	if pairs == 0 {
		return benchkit.Skip(what, "no repeat measured both")
	}
	verdict := benchkit.Check(what, met, "")
	if met && undetermined {
		verdict.Verdict, verdict.Note = benchkit.Undetermined, "widen --rates: below etcd's highest or above kv's"
	}
	if pairs == 1 {
		k, e := kv[0], repeatOf(etcd, kv[0].Repeat)
		if e.MaxSustained == 0 {
			const lower = "add lower --rates to find etcd's"
			if k.MaxSustained == 0 {
				return benchkit.Goal{Goal: what, Measured: fmt.Sprintf("neither sustains the lowest rate of the sweep (%.0f ops/s)", res.Config.Rates[0]),
					Verdict: benchkit.NotMet, Note: lower}
			}
			return benchkit.Goal{Goal: what, Measured: fmt.Sprintf("kv %s, etcd sustains none of the sweep", rateOrNone(k.MaxSustained)),
				Verdict: benchkit.Undetermined, Note: lower}
		}
		verdict.Measured = fmt.Sprintf("kv %s, etcd %s, ratio %s", rateOrNone(k.MaxSustained), rateOrNone(e.MaxSustained), ratios[0])
		return verdict
	}
	verdict.Goal += ", in every repeat"
	verdict.Measured = fmt.Sprintf("kv %s, etcd %s; ratio per repeat %s", ratesOf(kv), ratesOf(etcd), strings.Join(ratios, ", "))
	return verdict
}

// tailP99Goal is the steady-tail goal (docs/kv.md): p99 of every operation within 5 ms at every rate
// from the first step (right after the load) up to the highest sustained one.
const tailP99Goal = 5.0

func tailGoal(kv []*StoreResult, maintenance bool) benchkit.Goal {
	what := "kv p99 <= 5 ms at every rate up to its highest sustained one, the first step after the load included"
	if maintenance {
		what += ", with a compaction and a defragmentation in every step"
	}
	if len(kv) == 0 {
		return benchkit.Skip(what, "kv not measured")
	}
	worst, at, rep := 0.0, 0.0, 0
	for _, sr := range kv {
		for _, s := range sr.Sweep {
			if sr.MaxSustained > 0 && s.Rate > sr.MaxSustained {
				break
			}
			if s.MaxP99 > worst {
				worst, at, rep = s.MaxP99, s.Rate, sr.Repeat
			}
			if sr.MaxSustained == 0 {
				break // only the first step counts when none is sustained
			}
		}
	}
	measured := fmt.Sprintf("worst p99 %.2f ms (at %.0f ops/s, repeat %d)", worst, at, rep)
	if worst > tailP99Goal {
		// How far the goal holds: the highest rate below which every step of every repeat
		// kept p99 within 5 ms.
		within := math.Inf(1)
		for _, sr := range kv {
			held := 0.0
			for _, s := range sr.Sweep {
				if s.MaxP99 > tailP99Goal || !s.Sustained {
					break
				}
				held = s.Rate
			}
			within = min(within, held)
		}
		if within > 0 {
			measured += fmt.Sprintf("; p99 <= 5 ms held at every step up to %.0f ops/s in every repeat", within)
		} else {
			measured += "; the first step already exceeded 5 ms in some repeat"
		}
	}
	return benchkit.Check(what+", in every repeat", worst <= tailP99Goal, measured)
}

// closedGoal is the throughput goal (docs/kv.md): the closed-loop peak at least 2.5x etcd's.
func closedGoal(kv, etcd []*StoreResult) benchkit.Goal {
	const what = "closed-loop peak kv >= 2.5x etcd's"
	k, e := medianOf(kv, closedRate), medianOf(etcd, closedRate)
	if math.IsNaN(k) || math.IsNaN(e) || e == 0 {
		return benchkit.Skip(what, "no closed-loop run for both")
	}
	return benchkit.Check(what+medianNote(kv), k/e >= 2.5, fmt.Sprintf("kv %.0f ops/s, etcd %.0f ops/s, ratio %.2fx", k, e, k/e))
}

// measured returns the repeats of store that were measured, in repeat order.
func measured(res *Result, store string) []*StoreResult {
	var out []*StoreResult
	for i := range res.Stores {
		if sr := &res.Stores[i]; sr.Store == store && sr.Error == "" {
			out = append(out, sr)
		}
	}
	return out
}

func repeatOf(srs []*StoreResult, rep int) *StoreResult {
	for _, sr := range srs {
		if sr.Repeat == rep {
			return sr
		}
	}
	return nil
}

func maxSustained(sr *StoreResult) (float64, bool) { return sr.MaxSustained, true }

func p50At(sr *StoreResult, rate float64, op string) (float64, bool) {
	s := stepAt(sr, rate)
	if s == nil {
		return 0, false
	}
	o, ok := s.Ops[op]
	return o.P50, ok
}

// medianOf is the median of f over the repeats that have the figure (NaN: none has it, so a
// goal can tell "not measured" from 0).
func medianOf(srs []*StoreResult, f func(*StoreResult) (float64, bool)) float64 {
	vs := benchkit.Values(srs, f)
	if len(vs) == 0 {
		return math.NaN()
	}
	return benchkit.Median(vs)
}

// medianNote says that a figure is a median, when there was more than one repeat.
func medianNote(srs []*StoreResult) string {
	if len(srs) > 1 {
		return fmt.Sprintf(" (medians of %d repeats)", len(srs))
	}
	return ""
}

func ratesOf(srs []*StoreResult) string {
	parts := make([]string, len(srs))
	for i, sr := range srs {
		parts[i] = rateOrNone(sr.MaxSustained)
	}
	return strings.Join(parts, ", ")
}

func stepAt(sr *StoreResult, rate float64) *Step {
	for i := range sr.Sweep {
		if sr.Sweep[i].Rate == rate {
			return &sr.Sweep[i]
		}
	}
	return nil
}

func opNames(res *Result) []string {
	seen := map[string]bool{}
	for _, sr := range res.Stores {
		for _, s := range sr.Sweep {
			for op := range s.Ops {
				seen[op] = true
			}
		}
	}
	order := []string{"read", "update", "insert", "scan", "rmw"}
	var ops []string
	for _, op := range order {
		if seen[op] {
			ops = append(ops, op)
		}
	}
	return ops
}

func errTypes(s Step) string {
	m := map[string]int64{}
	for _, o := range s.Ops {
		for k, v := range o.ErrorsByType {
			m[k] += v
		}
	}
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, ", ") + ")"
}

func joinRates(r []float64) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(parts, ", ")
}

func rateOrNone(r float64) string {
	if r == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f ops/s", r)
}

func hasCost(res *Result) bool {
	for _, sr := range res.Stores {
		if sr.Cost != nil {
			return true
		}
	}
	return false
}

func mibs(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

// cpuGoalMicros is the goal for the server CPU per request in the closed loop.
const cpuGoalMicros = 40.0

func cpuGoal(kv, etcd []*StoreResult) benchkit.Goal {
	const what = "kv server CPU per request <= 40 µs (closed loop)"
	cpu := func(sr *StoreResult) (float64, bool) {
		if sr.Cost == nil {
			return 0, false
		}
		return sr.Cost.CPUMicros, true
	}
	k := medianOf(kv, cpu)
	if math.IsNaN(k) {
		return benchkit.Skip(what, "no closed-loop cost measured for kv")
	}
	allocs := func(sr *StoreResult) (float64, bool) {
		if sr.Cost == nil || sr.Cost.Allocs == 0 {
			return 0, false
		}
		return sr.Cost.Allocs, true
	}
	detail := fmt.Sprintf("kv %.1f µs", k)
	if e := medianOf(etcd, cpu); !math.IsNaN(e) {
		detail += fmt.Sprintf(" vs etcd %.1f µs", e)
	}
	if ka := medianOf(kv, allocs); !math.IsNaN(ka) {
		detail += fmt.Sprintf("; allocations per request kv %.1f", ka)
		if ea := medianOf(etcd, allocs); !math.IsNaN(ea) {
			detail += fmt.Sprintf(" vs etcd %.1f", ea)
		}
	}
	return benchkit.Check(what+medianNote(kv), k <= cpuGoalMicros, detail)
}

// largeValue is the record size from which the large-value goal applies (the NPM
// platform's Burst and Wave classes move 100 kB values).
const largeValue = 64 << 10

// largeGoal: with large values, kv's p50 is at most half etcd's and its p99 at most etcd's, for
// every operation at every rate both stores ran (medians over repeats).
func largeGoal(res *Result, kv, etcd []*StoreResult, size int) benchkit.Goal {
	what := fmt.Sprintf("large values (%d kB records): kv p50 <= half of etcd's and p99 <= etcd's at every rate both ran", size/1000)
	if len(kv) == 0 || len(etcd) == 0 {
		return benchkit.Skip(what, "kv and etcd must both be measured")
	}
	var parts []string
	ok := true
	for _, rate := range res.Config.Rates {
		for _, op := range opNames(res) {
			at := func(pick func(OpStats) float64) func(*StoreResult) (float64, bool) {
				return func(sr *StoreResult) (float64, bool) {
					s := stepAt(sr, rate)
					if s == nil {
						return 0, false
					}
					o, found := s.Ops[op]
					return pick(o), found && o.OK > 0
				}
			}
			p50 := func(o OpStats) float64 { return o.P50 }
			p99 := func(o OpStats) float64 { return o.P99 }
			k50, e50, k99, e99 := medianOf(kv, at(p50)), medianOf(etcd, at(p50)), medianOf(kv, at(p99)), medianOf(etcd, at(p99))
			if math.IsNaN(k50) || math.IsNaN(e50) {
				continue
			}
			parts = append(parts, fmt.Sprintf("%.0f/s %s p50 %.2f vs %.2f ms, p99 %.2f vs %.2f ms", rate, op, k50, e50, k99, e99))
			ok = ok && k50 <= e50/2 && k99 <= e99
		}
	}
	if len(parts) == 0 {
		return benchkit.Skip(what, "no rate ran on both")
	}
	return benchkit.Check(what+medianNote(kv)+" (kv vs etcd)", ok, strings.Join(parts, "; "))
}
