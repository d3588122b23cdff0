package rtdbbench

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// Goals are issue 24's for the realtime database's listeners.
func Goals(r *Result) []benchkit.Goal {
	n := r.Config.Listeners
	lat := fmt.Sprintf("p50 %.2f ms, p99 %.2f ms with %d listeners at %g writes/s", r.SSE.P50, r.SSE.P99, n, r.Config.Rate)
	complete := r.SSE.Delivered == r.SSE.Expected && r.SSE.Errors == 0
	g := []benchkit.Goal{
		benchkit.Check("write -> listener p50 <= 10 ms with 1000 listeners", complete && n >= 1000 && r.SSE.P50 <= 10, lat),
		benchkit.Check("write -> listener p99 <= 50 ms with 1000 listeners", complete && n >= 1000 && r.SSE.P99 <= 50, lat),
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
		"record under it at %g writes/s, open loop, for %v after a %v warmup. Latency is from each write's intended "+
		"send time to its receipt by each listener (so a late write counts), over every (write, listener) pair. "+
		"The baseline, in the same run: %d raw kv watches (etcd API, 100 per client connection) on one key, "+
		"the same rate of kv Puts. The listeners, the writer, the kv store and the realtime database share the "+
		"machine's CPUs.", c.Listeners, c.Rate, c.Duration, c.Warmup, c.Listeners)
	t := benchkit.NewTable("lrrrrrrrr", "path", "writes", "deliveries", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "write errors")
	for _, row := range []struct {
		name string
		l    Latency
	}{{"raw kv watch (floor)", r.RawWatch}, {"realtime db SSE", r.SSE}} {
		t.Rowf("%s | %d | %d/%d | %.2f | %.2f | %.2f | %.2f | %.2f | %d", row.name, row.l.Writes, row.l.Delivered, row.l.Expected,
			row.l.P50, row.l.P90, row.l.P99, row.l.P999, row.l.Max, row.l.Errors)
	}
	d.Table(t)
	if r.RawWatch.P50 > 0 {
		d.Para("SSE / raw watch: p50 x%.1f, p99 x%.1f.", r.SSE.P50/r.RawWatch.P50, r.SSE.P99/max(r.RawWatch.P99, 1e-9))
	}
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
