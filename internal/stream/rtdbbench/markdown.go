package rtdbbench

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// Summary is the latency phases over the repeats: medians of each repeat's percentiles, and
// whether every write reached every listener in every repeat.
type Summary struct {
	P50, P99       benchkit.Spread
	Complete       bool
	RatioP50       benchkit.Spread // SSE / raw watch, repeat by repeat
	RatioP99       benchkit.Spread
	RawP50, RawP99 benchkit.Spread
}

// Summarize computes the Summary of r.
func Summarize(r *Result) Summary {
	get := func(ls []Latency, f func(Latency) float64) []float64 {
		v := make([]float64, len(ls))
		for i, l := range ls {
			v[i] = f(l)
		}
		return v
	}
	p50 := func(l Latency) float64 { return l.P50 }
	p99 := func(l Latency) float64 { return l.P99 }
	s := Summary{P50: benchkit.Summarize(get(r.SSE, p50)), P99: benchkit.Summarize(get(r.SSE, p99)),
		RawP50: benchkit.Summarize(get(r.RawWatch, p50)), RawP99: benchkit.Summarize(get(r.RawWatch, p99)), Complete: len(r.SSE) > 0}
	var q50, q99 []float64
	for i, l := range r.SSE {
		s.Complete = s.Complete && l.Delivered == l.Expected && l.Errors == 0
		if i < len(r.RawWatch) && r.RawWatch[i].P50 > 0 && r.RawWatch[i].P99 > 0 {
			q50 = append(q50, l.P50/r.RawWatch[i].P50)
			q99 = append(q99, l.P99/r.RawWatch[i].P99)
		}
	}
	s.RatioP50, s.RatioP99 = benchkit.Summarize(q50), benchkit.Summarize(q99)
	return s
}

// Goals are issue 24's for the realtime database's listeners.
func Goals(r *Result) []benchkit.Goal {
	n := r.Config.Listeners
	sm := Summarize(r)
	lat := fmt.Sprintf("median of %d repeats: p50 %s ms, p99 %s ms with %d listeners at %g writes/s", len(r.SSE),
		sm.P50.Format("%.1f"), sm.P99.Format("%.1f"), n, r.Config.Rate)
	g := []benchkit.Goal{
		benchkit.Check("write -> listener p50 <= 10 ms with 1000 listeners", sm.Complete && n >= 1000 && sm.P50.Median <= 10, lat),
		benchkit.Check("write -> listener p99 <= 50 ms with 1000 listeners", sm.Complete && n >= 1000 && sm.P99.Median <= 50, lat),
		benchkit.Check(">= 10k writes/s", r.SSEWrites.PerSecond >= 10000,
			fmt.Sprintf("%.0f REST writes/s (%d writers, %d listener(s)); raw kv puts %.0f/s", r.SSEWrites.PerSecond,
				r.Config.ThroughputWriters, r.Config.ThroughputListeners, r.RawPuts.PerSecond)),
		benchkit.Check("1000 listeners back to steady state within 10 s of a server restart",
			n >= 1000 && r.Reconnected == n && r.ReconnectSecs <= 10,
			fmt.Sprintf("%d of %d back in %.2f s", r.Reconnected, n, r.ReconnectSecs)),
	}
	return g
}

// Markdown renders a result.
func Markdown(r *Result) string {
	d := benchkit.NewDoc("Realtime database: write-to-listener latency (stream-notify)", r.Header)
	c := r.Config
	d.Para("continuum kv and the realtime database run in the benchmark's process on loopback (the LAN case: "+
		"no emulated delay); %d SSE listeners (`Accept: text/event-stream`) listen to one path, and a writer PUTs a "+
		"record under it at %g writes/s, open loop, for %v after a %v warmup, %d times, alternating with the baseline. Latency is from each write's intended "+
		"send time to its receipt by each listener (so a late write counts), over every (write, listener) pair; "+
		"\"write answered\" is from the same intended time to the write's own answer (REST PUT: two kv Txns), "+
		"\"after answer\" each delivery's latency less its write's answer time (the notification path alone). "+
		"The baseline, in the same run: %d raw kv watches (etcd API, 100 per client connection) on one key, "+
		"the same rate of kv Puts. The listeners, the writer, the kv store and the realtime database share the "+
		"machine's CPUs.", c.Listeners, c.Rate, c.Duration, c.Warmup, c.Repeats, c.Listeners)
	t := benchkit.NewTable("lrrrrrrrrrrrrr", "path", "repeat", "writes", "deliveries", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
		"write answered p50 ms", "p99 ms", "after answer p50 ms", "p99 ms", "write errors")
	for i := range r.SSE {
		for _, row := range []struct {
			name string
			ls   []Latency
		}{{"raw kv watch (baseline)", r.RawWatch}, {"realtime db SSE", r.SSE}} {
			if i >= len(row.ls) {
				continue
			}
			l := row.ls[i]
			t.Rowf("%s | %d | %d | %d/%d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d", row.name, i+1, l.Writes, l.Delivered,
				l.Expected, l.P50, l.P90, l.P99, l.P999, l.Max, l.WriteP50, l.WriteP99, l.AfterAnswerP50, l.AfterAnswerP99, l.Errors)
		}
	}
	d.Table(t)
	sm := Summarize(r)
	d.Para("Medians over the repeats (min–max): SSE p50 %s ms, p99 %s ms; raw kv watch p50 %s ms, p99 %s ms; "+
		"SSE / raw watch, repeat by repeat: p50 x%s, p99 x%s.", sm.P50.Format("%.1f"), sm.P99.Format("%.1f"),
		sm.RawP50.Format("%.1f"), sm.RawP99.Format("%.1f"), sm.RatioP50.Format("%.2f"), sm.RatioP99.Format("%.2f"))
	d.Para("Where the time goes: the hub turns a write into one shared, once-encoded event whatever the number " +
		"of listeners, but SSE is one HTTP stream per listener, so each write becomes one socket write per listener " +
		"on the server and one read per listener in the benchmark's clients, all on this machine's CPUs; the raw " +
		"watches share one gRPC connection per 100 watches. A CPU profile of the SSE phase " +
		"(`RTDBBENCH_PROFILE=1 go test -run TestProfileSSE -cpuprofile cpu.prof ./internal/stream/rtdbbench/`) " +
		"puts the server's time in those per-listener socket writes, not in the hub's dispatch; with the CPUs " +
		"busy (see the load average above) each write's 1000 deliveries also wait to be scheduled.")
	d.Section("Writes per second")
	d.Para("%d closed-loop writers for %v: REST PUTs of small records (each one read Txn and one guarded write Txn in kv) "+
		"with %d listener(s) on the written path, and raw kv Puts from one client as the floor.", c.ThroughputWriters,
		c.ThroughputDuration, c.ThroughputListeners)
	tt := benchkit.NewTable("lrrrl", "path", "writes", "writes/s", "errors", "listeners saw the last write")
	tt.Rowf("raw kv Put | %d | %.0f | %d | ", r.RawPuts.Writes, r.RawPuts.PerSecond, r.RawPuts.Errors)
	tt.Rowf("realtime db REST PUT | %d | %.0f | %d | %s", r.SSEWrites.Writes, r.SSEWrites.PerSecond, r.SSEWrites.Errors, benchkit.YesNo(r.SSEWrites.ListenerOK))
	d.Table(tt)
	d.Section("Reconnecting after a restart")
	d.Para("%d listeners connected; the realtime database shuts down (their streams end) and starts again on the same "+
		"address; each client retries after a uniform random delay in [0, %v), doubling up to %v. From the shutdown "+
		"until every client has its first put again: **%.2f s** (%d of %d back).", c.Listeners, c.ReconnectBackoff,
		4*c.ReconnectBackoff, r.ReconnectSecs, r.Reconnected, c.Listeners)
	d.Goals("Goals (issue 24)", Goals(r))
	d.RawJSON(r)
	return d.String()
}
