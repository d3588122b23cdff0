package kubebench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// Markdown renders a result: the header, what was measured, the findings, a table per part
// (latency, footprint, restart, lost updates), errors, and the raw JSON.
func Markdown(r *Result) string {
	d := benchkit.NewDoc("kube-apiserver on continuum kv and on etcd", r.Header)
	c := r.Config
	d.Para("kube-apiserver (%s) started here on a single-member store on loopback: continuum kv (%s) and etcd (%s), "+
		"a fresh store and apiserver per run, the stores interleaved; repeats: %d. Figures are medians over the repeats with their range "+
		"in parentheses; kv/etcd ratios are taken repeat by repeat (the two stores measured one after the other) and their median shown: "+
		"below 1, kv is faster or smaller.",
		r.version(StoreKV, func(s StoreRun) string { return s.APIServerVersion }), r.version(StoreKV, storeVersion),
		r.version(StoreEtcd, storeVersion), c.Repeats)
	d.Goals("Findings", r.findings())
	r.latencySection(d)
	r.footprintSection(d)
	r.restartSection(d)
	r.raceSection(d)
	r.errorsSection(d)
	d.RawJSON(r)
	return d.String()
}

func storeVersion(s StoreRun) string { return s.StoreVersion }

// version is the first version f reads from a store's runs.
func (r *Result) version(store string, f func(StoreRun) string) string {
	for _, s := range r.storeRuns(store) {
		if v := f(s); v != "" {
			return v
		}
	}
	return "version not read"
}

// ms, mib and sec format a spread's cells.
func ms(s benchkit.Spread) string  { return cell(s, "%.1f", 1) }
func sec(s benchkit.Spread) string { return cell(s, "%.1f", 1) }
func mib(s benchkit.Spread) string { return cell(s, "%.0f", 1<<20) }
func ratio(s benchkit.Spread) string {
	if s.N == 0 {
		return "–"
	}
	return s.Format("%.2f")
}

// cell renders a spread scaled down by unit, or a dash when nothing was measured.
func cell(s benchkit.Spread, format string, unit float64) string {
	if s.N == 0 {
		return "–"
	}
	s.Median, s.Min, s.Max = s.Median/unit, s.Min/unit, s.Max/unit
	return s.Format(format)
}

// findings are the headline figures, one line each.
func (r *Result) findings() []benchkit.Goal {
	var out []benchkit.Goal
	var parts []string
	for _, op := range Ops {
		if s := r.Ratio(OpFigure(op, 0.5)); s.N > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", op, s.Median))
		}
	}
	if len(parts) > 0 {
		out = append(out, benchkit.Report("Request latency, p50 kv/etcd", strings.Join(parts, ", ")))
	}
	fp := func(name string) string {
		return fmt.Sprintf("%s on kv vs %s on etcd", mibMedian(r.FigureSpread(StoreKV, name)), mibMedian(r.FigureSpread(StoreEtcd, name)))
	}
	if len(r.Runs) > 0 {
		out = append(out,
			benchkit.Report("Store data directory after the load", fp("store_disk")),
			benchkit.Report("Store RSS after the load", fp("store_rss")),
			benchkit.Report("kube-apiserver RSS after the load", fp("apiserver_rss")))
	}
	for i, down := range r.Config.RestartDowns {
		name := fmt.Sprintf("restart_readyz@%d", i)
		k, e := r.FigureSpread(StoreKV, name), r.FigureSpread(StoreEtcd, name)
		if k.N+e.N == 0 {
			continue
		}
		out = append(out, benchkit.Report(fmt.Sprintf("/readyz 200 again after the store was killed, down %v and restarted", down),
			fmt.Sprintf("%s s on kv vs %s s on etcd after the restart", sec(k), sec(e))))
	}
	for _, setting := range RaceSettings {
		t, lost := r.RaceTotals(setting)
		if t.Repeat == 0 {
			continue
		}
		out = append(out, benchkit.Report("Lost updates, "+setting,
			fmt.Sprintf("%d of %d acknowledged updates over %d repeats (per repeat: %s)", t.Lost, t.Successes, t.Repeat, joinInts(lost))))
	}
	return out
}

func mibMedian(s benchkit.Spread) string {
	if s.N == 0 {
		return "–"
	}
	return benchkit.MiB(s.Median)
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func (r *Result) latencySection(d *benchkit.Doc) {
	c := r.Config
	d.Section("Request latency through client-go")
	d.Para("%d concurrent callers on one clientset (client-go's rate limit off) create %d ConfigMaps of %d bytes, get each, update each, "+
		"run %d full paginated lists (limit %d, %d pages each; one sample is the whole list), then delete each. "+
		"Watch is a watch on the namespace opened before the creates: from a create's request to its ADDED event. Milliseconds.",
		c.Clients, c.Objects, c.ValueBytes, c.Lists, c.PageSize, (c.Objects+c.PageSize-1)/c.PageSize)
	t := benchkit.NewTable("lrrrrrr", "operation", "kv p50", "etcd p50", "kv/etcd p50", "kv p99", "etcd p99", "kv/etcd p99")
	for _, op := range Ops {
		t.Row(op, ms(r.OpSpread(StoreKV, op, 0.5)), ms(r.OpSpread(StoreEtcd, op, 0.5)), ratio(r.Ratio(OpFigure(op, 0.5))),
			ms(r.OpSpread(StoreKV, op, 0.99)), ms(r.OpSpread(StoreEtcd, op, 0.99)), ratio(r.Ratio(OpFigure(op, 0.99))))
	}
	d.Table(t)
}

func (r *Result) footprintSection(d *benchkit.Doc) {
	d.Section("Footprint after the load")
	d.Para("Read after the lists, with all %d ConfigMaps present (each created and updated once): the store's data directory "+
		"(allocated blocks, as du counts them: etcd preallocates its WAL), the store's and kube-apiserver's resident memory "+
		"(the apiserver's from its own process_resident_memory_bytes), and the apiserver's start on an empty store.", r.Config.Objects)
	t := benchkit.NewTable("lrrr", "figure", "kv", "etcd", "kv/etcd")
	for _, f := range []struct{ label, name, unit string }{
		{"store data directory (MiB)", "store_disk", "MiB"},
		{"store RSS (MiB)", "store_rss", "MiB"},
		{"kube-apiserver RSS (MiB)", "apiserver_rss", "MiB"},
		{"kube-apiserver start to /readyz 200 (s)", "apiserver_start", "s"},
	} {
		k, e := r.FigureSpread(StoreKV, f.name), r.FigureSpread(StoreEtcd, f.name)
		fmtCell := sec
		if f.unit == "MiB" {
			fmtCell = mib
		}
		t.Row(f.label, fmtCell(k), fmtCell(e), ratio(r.Ratio(func(s StoreRun) (float64, bool) { return s.Figure(f.name) })))
	}
	d.Table(t)
}

func (r *Result) restartSection(d *benchkit.Doc) {
	downs := r.Config.RestartDowns
	if len(downs) == 0 {
		return
	}
	d.Section("Store killed under the running apiserver")
	d.Para("After the deletes, the store is killed with SIGKILL, kept down for the time given, and restarted on the same data " +
		"directory and ports. Seconds from the restart until the store answers, until kube-apiserver's /readyz answers 200 (polled " +
		"every 100 ms, 2 s timeout per poll, from the kill on) and until a ConfigMap create succeeds (tried every 100 ms).")
	t := benchkit.NewTable("llrrrl", "down", "store", "store back", "/readyz 200", "create ok", "/readyz failed meanwhile")
	for i, down := range downs {
		for _, store := range r.Config.Stores {
			failed, n := 0, 0
			for _, s := range r.storeRuns(store) {
				if i < len(s.Restarts) {
					n++
					if s.Restarts[i].ReadyzFailed {
						failed++
					}
				}
			}
			t.Row(down.String(), store, sec(r.FigureSpread(store, fmt.Sprintf("restart_store@%d", i))),
				sec(r.FigureSpread(store, fmt.Sprintf("restart_readyz@%d", i))), sec(r.FigureSpread(store, fmt.Sprintf("restart_create@%d", i))),
				fmt.Sprintf("%d of %d runs", failed, n))
		}
	}
	d.Table(t)
	if note := restartTrend(r); note != "" {
		d.Para("%s", note)
	}
	// What the apiserver said, for the longest time down only (the shorter ones say the same, less).
	i := slices.Index(downs, slices.Max(downs))
	down := downs[i]
	for _, store := range r.Config.Stores {
		rs := r.firstRestart(store, i)
		if rs == nil {
			continue
		}
		var items []string
		for _, c := range rs.Checks {
			items = append(items, "/readyz: "+benchkit.OneLine(c, 300))
		}
		for _, l := range rs.Log {
			items = append(items, "log: `"+strings.ReplaceAll(l, "`", "'")+"`")
		}
		if len(items) == 0 {
			continue
		}
		d.Para("What the apiserver said on %s, down %v (first repeat; numbers masked as N; warnings and errors from the kill to /readyz 200, most frequent first):", store, down)
		d.List(items...)
	}
}

// restartTrend says, when the figures show it, that the wait for /readyz after the restart grows
// with the time the store was down on both stores alike (then it is the apiserver's reconnection,
// not the store); empty otherwise.
func restartTrend(r *Result) string {
	downs := r.Config.RestartDowns
	if len(downs) < 2 || !slices.Contains(r.Config.Stores, StoreKV) || !slices.Contains(r.Config.Stores, StoreEtcd) {
		return ""
	}
	last := len(downs) - 1
	var first, longest [2]float64
	for j, store := range []string{StoreKV, StoreEtcd} {
		a, b := r.FigureSpread(store, "restart_readyz@0"), r.FigureSpread(store, fmt.Sprintf("restart_readyz@%d", last))
		if a.N == 0 || b.N == 0 {
			return ""
		}
		first[j], longest[j] = a.Median, b.Median
	}
	grows := longest[0] > first[0]+2 && longest[1] > first[1]+2
	alike := longest[0] < 1.5*longest[1] && longest[1] < 1.5*longest[0]
	if !grows || !alike {
		return ""
	}
	return fmt.Sprintf("The store itself is back within about a second whatever the time down; the apiserver's wait after it grows with the "+
		"time the store was down (/readyz %.1f s after a restart at once, %.1f s after %v down on kv; %.1f and %.1f s on etcd), "+
		"on both stores alike: that points at the reconnection of the apiserver's etcd clients (gRPC backs off between dials while the store is down), not at the store's recovery.",
		first[0], longest[0], downs[last], first[1], longest[1])
}

// firstRestart is the first run's i-th restart of store.
func (r *Result) firstRestart(store string, i int) *Restart {
	for _, s := range r.storeRuns(store) {
		if i < len(s.Restarts) {
			return &s.Restarts[i]
		}
	}
	return nil
}

func (r *Result) raceSection(d *benchkit.Doc) {
	if len(r.Races) == 0 {
		return
	}
	c := r.Config
	d.Section("Two apiservers, one object: lost updates")
	d.Para("Kubernetes relies on compare-and-swap on resourceVersion being linearizable. Two kube-apiservers; %d goroutines per apiserver "+
		"each make %d successful read-modify-write increments of one ConfigMap's counter (Get, +1, Update; a 409 Conflict is counted and "+
		"retried). Then the counter is read through both apiservers until they agree. Lost = acknowledged Updates - final counter. "+
		"Settings: the apiservers on two members of a %d-member continuum kv cluster (each member's own revisions; replication settles "+
		"concurrent writes last-writer-wins), both on one member of that cluster (the other member(s) replicate only), and both on one etcd. "+
		"Totals over %d repeats.", c.RaceWriters, c.RaceIncrements, c.RaceMembers, c.Repeats)
	t := benchkit.NewTable("lrrrrrrl", "setting", "repeats", "acknowledged", "conflicts (409)", "other errors", "final (sum)", "lost", "lost per repeat")
	for _, s := range RaceSettings {
		tot, lost := r.RaceTotals(s)
		if tot.Repeat == 0 {
			continue
		}
		t.Row(s, fmt.Sprint(tot.Repeat), fmt.Sprint(tot.Successes), fmt.Sprint(tot.Conflicts), fmt.Sprint(tot.OtherErrors),
			fmt.Sprint(tot.Final), fmt.Sprint(tot.Lost), joinInts(lost))
	}
	d.Table(t)
	d.Para("**The safe setting is one writer member**: every kube-apiserver of a cluster uses the same kv member (`--etcd-servers` " +
		"naming that member only); the other members replicate and serve as warm copies. kv's per-request k-durability does not change " +
		"this: kube-apiserver cannot send it (it is gRPC metadata, `continuum-durability`, on each request, and the apiserver's etcd " +
		"client sends none; kv has no server-side default for it), and even when sent it only delays the acknowledgement until k members " +
		"hold the write: the compare is still evaluated on the member that took the request alone, so two members can both accept a " +
		"compare-and-swap on the same resourceVersion, and last-writer-wins later drops one of them.")
}

func (r *Result) errorsSection(d *benchkit.Doc) {
	var items []string
	for _, s := range r.Runs {
		if s.Error != "" {
			items = append(items, fmt.Sprintf("%s, repeat %d: %s", s.Store, s.Repeat, benchkit.OneLine(s.Error, 400)))
		}
		for _, rs := range s.Restarts {
			if rs.Error != "" {
				items = append(items, fmt.Sprintf("%s, repeat %d, restart after %v down: %s", s.Store, s.Repeat, time.Duration(rs.DownS*float64(time.Second)), benchkit.OneLine(rs.Error, 400)))
			}
		}
		for _, op := range Ops {
			if l, ok := s.Ops[op]; ok && l.Errors > 0 {
				items = append(items, fmt.Sprintf("%s, repeat %d: %d %s errors: %s", s.Store, s.Repeat, l.Errors, op, l.Error))
			}
		}
	}
	for _, x := range r.Races {
		if x.Error != "" {
			items = append(items, fmt.Sprintf("%s, repeat %d: %s", x.Setting, x.Repeat, benchkit.OneLine(x.Error, 400)))
		}
	}
	if len(items) == 0 {
		return
	}
	slices.Sort(items)
	d.Section("Errors")
	d.List(items...)
}

// ReadResult reads a result's JSON (written next to its Markdown).
func ReadResult(path string) (*Result, error) {
	var r Result
	if err := benchkit.ReadJSON(path, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
