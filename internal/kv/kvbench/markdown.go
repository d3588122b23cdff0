package kvbench

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

// Markdown renders a benchmark for docs/benchmarks/: command, machine, date, configuration,
// tables, the result against issue 3's goals, and the raw JSON.
func Markdown(res *Result, command, machine, commit string) string {
	var b strings.Builder
	cfg := res.Config
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# continuum kv vs etcd vs Redis on one node (YCSB)\n\n")
	p("Regenerate with:\n\n```\n%s\n```\n\n", command)
	p("- Machine: %s\n", machine)
	p("- Date: %s (%.0f s)\n", res.Started.Format(time.RFC3339), res.Finished.Sub(res.Started).Seconds())
	if commit != "" {
		p("- Commit: %s\n", commit)
	}
	p("- Workload: YCSB %s, %d records of %d field(s) x %d B, request distribution as in YCSB's workload file; load phase with %d closed-loop clients\n",
		strings.ToUpper(cfg.Workload), res.Records, cfg.FieldCount, cfg.FieldLength, cfg.LoadClients)
	p("- Open-loop sweep: %s ops/s, %v per step (first %v excluded), latency from the intended send time; a rate is *sustained* when throughput >= 95%% of it, no request fails and every operation's p99 <= %v. The sweep stops at the first rate not sustained.\n",
		joinRates(cfg.Rates), cfg.StepDuration, cfg.Warmup, cfg.P99Limit)
	p("- The sweep always reaches %.0f ops/s (the goals compare p50 there), even past an unsustained rate; the highest sustained rate is the highest with every rate up to it sustained.\n", cfg.SweepAtLeast)
	p("- Closed loop: %d clients for %v (peak throughput).\n", cfg.ClosedClients, cfg.ClosedDuration)
	p("- Same machine, same run, one store at a time; the load generator runs in the same process as the benchmark and shares the CPUs with the server.\n")
	p("- Durability: etcd with its defaults (fsync of WAL before acknowledging); continuum kv with its default (group commit, fsync before acknowledging); Redis with AOF `appendfsync %s`", cfg.RedisFsync)
	if cfg.RedisFsync == "everysec" {
		p(" — **the weaker baseline**: it acknowledges before the fsync and can lose up to ~1 s of acknowledged writes")
	}
	p(".\n\n")

	for _, sr := range res.Stores {
		if sr.Error != "" {
			p("**%s not measured**: %s\n\n", sr.Store, oneLine(sr.Error))
		}
	}

	p("## Rate sweep (open loop): p50 / p99 in ms per operation\n\n")
	ops := opNames(res)
	p("| store | target ops/s | achieved ops/s |")
	for _, op := range ops {
		p(" %s p50 | %s p99 |", op, op)
	}
	p(" errors | sustained |\n|---|---:|---:|")
	for range ops {
		p("---:|---:|")
	}
	p("---:|:---:|\n")
	for _, sr := range res.Stores {
		for _, s := range sr.Sweep {
			p("| %s | %.0f | %.0f |", sr.Store, s.Rate, s.ThroughputRPS)
			for _, op := range ops {
				o := s.Ops[op]
				p(" %.2f | %.2f |", o.P50, o.P99)
			}
			p(" %d%s | %s |\n", s.Errors, errTypes(s), yesNo(s.Sustained))
		}
	}
	p("\n## Summary per store\n\n")
	p("| store | version | highest sustained rate (p99 <= %v) | closed loop (%d clients) ops/s | closed-loop p50 / p99 ms | load phase inserts/s | RSS loaded | RSS per 1M keys | disk per 1M keys | host load avg (start / end) |\n",
		cfg.P99Limit, cfg.ClosedClients)
	p("|---|---|---:|---:|---|---:|---:|---:|---:|---|\n")
	for _, sr := range res.Stores {
		if sr.Error != "" {
			p("| %s | %s | not measured | | | | | | | |\n", sr.Store, sr.Version)
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
		p("| %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %.2f / %.2f |\n", sr.Store, sr.Version, rateOrNone(sr.MaxSustained), closed, lat,
			sr.LoadInsertsPS, mib(float64(sr.RSSLoaded)), mib(sr.RSSPerMillion), mib(sr.DiskPerMillion), sr.LoadAvg[0], sr.LoadAvg[1])
	}
	if cfg.FootprintRecords > res.Records {
		p("\nRSS and disk per 1M keys are the growth from the empty server to one holding %d keys: after the runs above, the benchmark inserts records (same key and value shape) until the store holds that many, waits %v, and reads RSS and the data directory's allocated blocks; the figure is scaled to 10^6 keys. Measuring at that size, not extrapolating from the %d loaded records, keeps fixed costs (a Go heap-goal floor, preallocated log segments) from being multiplied as if they grew with the keys. \"RSS loaded\" is the RSS with the %d records, during the runs. etcd preallocates 64 MiB WAL segments, which the empty baseline already holds.",
			cfg.FootprintRecords, cfg.Settle, res.Records, res.Records)
	} else {
		p("\nRSS and disk per 1M keys are the growth from the empty server to the loaded one (after a %v settle), scaled from %d records to 10^6; disk is allocated blocks of the data directory (etcd preallocates 64 MiB WAL segments, which the empty baseline already holds).",
			cfg.Settle, res.Records)
	}
	p(" Redis's figure includes the sorted-set index scans use. The host load average shows what else ran on the machine: with 2 CPUs, a load above ~1.5 beyond the benchmark itself means the server and load generator were competing for CPU, which shows up first in p99.\n\n")

	if busy := busiest(res); busy > busyLoad {
		p("**Caution: the machine was busy.** The host's 1-minute load average reached %.2f on %d CPUs during this run. It counts this benchmark's own processes too (a server and the load generator near their limit make about 2, and the insert phase that grows a store to the footprint size lingers in the next store's starting figure), but above %.1f the servers and the load generator were competing for CPU with each other or with other processes; that inflates p99 most, and lowers closed-loop throughput. The ratios between stores are still side by side, but each store met different contention: compare with a run on an idle machine before drawing conclusions.\n\n",
			busy, runtime.NumCPU(), busyLoad)
	}
	p("## Against the goals of issue 3\n\n")
	for _, g := range goals(res) {
		p("- %s\n", g)
	}
	raw, _ := json.MarshalIndent(res, "", "  ")
	p("\n<details><summary>raw results (JSON)</summary>\n\n```json\n%s\n```\n</details>\n", raw)
	return b.String()
}

// goals states each goal's verdict from what was measured; unmeasured stores say so.
func goals(res *Result) []string {
	get := func(name string) *StoreResult {
		for i := range res.Stores {
			if res.Stores[i].Store == name && res.Stores[i].Error == "" {
				return &res.Stores[i]
			}
		}
		return nil
	}
	kv, etcd, redis := get(kvtarget.KindKV), get(kvtarget.KindEtcd), get(kvtarget.KindRedis)
	var out []string
	switch {
	case kv == nil || etcd == nil:
		out = append(out, "kv >= 3x etcd's highest rate with p99 <= 10 ms: **not evaluated** (kv and etcd must both be measured in the same run)")
	case etcd.MaxSustained == 0 && kv.MaxSustained == 0:
		out = append(out, fmt.Sprintf("kv >= 3x etcd's highest rate with p99 <= 10 ms: neither sustains the lowest rate of the sweep (%.0f ops/s): **not met** (add lower --rates to find etcd's)",
			res.Config.Rates[0]))
	case etcd.MaxSustained == 0:
		out = append(out, fmt.Sprintf("kv >= 3x etcd's highest rate with p99 <= 10 ms: kv %s, etcd sustains none of the sweep: **undetermined** (add lower --rates to find etcd's)",
			rateOrNone(kv.MaxSustained)))
	default:
		ratio := kv.MaxSustained / etcd.MaxSustained
		out = append(out, fmt.Sprintf("kv >= 3x etcd's highest rate with p99 <= 10 ms: kv %s, etcd %s, ratio %.2fx: **%s**",
			rateOrNone(kv.MaxSustained), rateOrNone(etcd.MaxSustained), ratio, metOrNot(ratio >= 3)))
	}
	if kv != nil && etcd != nil {
		k, e := stepAt(kv, 5000), stepAt(etcd, 5000)
		if k == nil || e == nil {
			out = append(out, "kv p50 at 5k/s <= etcd's: **not evaluated** (5000 ops/s not in both sweeps)")
		} else {
			ok := true
			var parts []string
			for op, eo := range e.Ops {
				ko := k.Ops[op]
				parts = append(parts, fmt.Sprintf("%s kv %.2f ms vs etcd %.2f ms", op, ko.P50, eo.P50))
				ok = ok && ko.P50 <= eo.P50
			}
			sort.Strings(parts)
			out = append(out, fmt.Sprintf("kv p50 at 5k/s <= etcd's: %s: **%s**", strings.Join(parts, "; "), metOrNot(ok)))
		}
	} else {
		out = append(out, "kv p50 at 5k/s <= etcd's: **not evaluated** (kv and etcd must both be measured)")
	}
	if kv != nil && redis != nil {
		out = append(out, fmt.Sprintf("stretch: kv within 1.5x of Redis's rate: kv %s, Redis %s: **%s**",
			rateOrNone(kv.MaxSustained), rateOrNone(redis.MaxSustained), metOrNot(kv.MaxSustained*1.5 >= redis.MaxSustained)))
	} else {
		out = append(out, "stretch: kv within 1.5x of Redis's rate: **not evaluated** (kv and Redis must both be measured)")
	}
	if kv != nil && etcd != nil && etcd.RSSPerMillion > 0 && etcd.DiskPerMillion > 0 {
		out = append(out, fmt.Sprintf("memory per 1M keys: kv %s vs etcd %s (%.2fx); disk per 1M keys: kv %s vs etcd %s (%.2fx)",
			mib(kv.RSSPerMillion), mib(etcd.RSSPerMillion), kv.RSSPerMillion/etcd.RSSPerMillion,
			mib(kv.DiskPerMillion), mib(etcd.DiskPerMillion), kv.DiskPerMillion/etcd.DiskPerMillion))
	}
	return out
}

// busyLoad is the load average above which a run is flagged: the benchmark itself keeps about
// one or two runnable threads on a 2-CPU machine.
const busyLoad = 2.5

func busiest(res *Result) float64 {
	m := 0.0
	for _, sr := range res.Stores {
		m = max(m, sr.LoadAvg[0], sr.LoadAvg[1])
	}
	return m
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

func mib(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func metOrNot(b bool) string {
	if b {
		return "met"
	}
	return "not met"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
