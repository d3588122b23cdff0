package bridgebench

import (
	"fmt"

	"github.com/continuum-project/continuum/internal/benchkit"
)

func bridgeValues(res *Result, batch int, f func(BridgeRun) float64) []float64 {
	return benchkit.Values(res.Bridge, func(r BridgeRun) (float64, bool) { return f(r), r.Batch == batch })
}

func perfValues(res *Result) []float64 {
	return benchkit.Values(res.Perf, func(r PerfRun) (float64, bool) { return r.Records, true })
}

func latValues(res *Result, f func(LatencyRun) float64) []float64 {
	return benchkit.Values(res.Latency, func(r LatencyRun) (float64, bool) { return f(r), true })
}

// Goals from issue 24: the bridge >= 50k records/s of 1 KB on one core; publish->consume p99
// <= 5 ms at 10k msg/s of 1 KB.
func goals(res *Result) []benchkit.Goal {
	var g []benchkit.Goal
	best := 0
	for _, b := range res.Config.Batch {
		if best == 0 || b > best {
			best = b
		}
	}
	thr := benchkit.Median(bridgeValues(res, best, func(r BridgeRun) float64 { return r.Records }))
	perCore := benchkit.Median(bridgeValues(res, best, func(r BridgeRun) float64 { return r.PerCore }))
	g = append(g, benchkit.Check("bridge >= 50k records/s of 1 KB on one core",
		thr >= 50000, fmt.Sprintf("%.0f records/s (median, batches of %d; %.0f per CPU-second of the bridge)", thr, best, perCore)))
	p99 := benchkit.Median(latValues(res, func(r LatencyRun) float64 { return r.P99ms }))
	g = append(g, benchkit.Check(fmt.Sprintf("broker publish->consume p99 <= 5 ms at %d msg/s of %d B", res.Config.LatencyRate, res.Config.RecordBytes),
		p99 <= 5, fmt.Sprintf("%.2f ms (median of %d repeats)", p99, len(res.Latency))))
	if perf := benchkit.Median(perfValues(res)); perf > 0 {
		g = append(g, benchkit.Report("bridge / Kafka's ProducerPerformance on the same core", fmt.Sprintf("%.2f", thr/perf)))
	}
	return g
}

// Markdown renders the result.
func Markdown(res *Result) string {
	d := benchkit.NewDoc("stream-bridge: throughput on one core and broker latency", res.Header)
	c := res.Config
	pinned := "not pinned (fewer than two CPUs, or no taskset): the bridge shared the CPUs with the broker and the load generator"
	if res.PinnedCPU >= 0 {
		pinned = fmt.Sprintf("the bridge (GOMAXPROCS=1) and the perf tool ran alone on CPU %d (taskset); the broker and the load generator on the other CPU", res.PinnedCPU)
	}
	d.Para("One Kafka %s broker (KRaft, this machine, topic of %d partition(s)); records of %d B shaped as the experiments' "+
		"(`{\"id\",\"user\",\"seq\",\"sent_us\",\"pad\"}`); producer settings of both the bridge and the baseline: acks=all, idempotent, "+
		"linger 0, batches up to 1 MiB, no compression. %d repeats, the bridge and the baseline alternating which goes first; medians, with the range in brackets. Pinning: %s.",
		"4.4.0", c.Partitions, c.RecordBytes, c.Repeats, pinned)
	d.Section("Throughput")
	t := benchkit.NewTable("lrrrrr", "producer", "records/s", "bridge cores", "records per CPU-second", "post p50 ms", "post p99 ms")
	for _, b := range c.Batch {
		f := func(g func(BridgeRun) float64) benchkit.Spread { return benchkit.Summarize(bridgeValues(res, b, g)) }
		t.Row(fmt.Sprintf("bridge, %d record(s) per POST, %d clients", b, c.Clients),
			f(func(r BridgeRun) float64 { return r.Records }).Format("%.0f"),
			f(func(r BridgeRun) float64 { return r.Cores }).Format("%.2f"),
			f(func(r BridgeRun) float64 { return r.PerCore }).Format("%.0f"),
			f(func(r BridgeRun) float64 { return r.P50ms }).Format("%.2f"),
			f(func(r BridgeRun) float64 { return r.P99ms }).Format("%.2f"))
	}
	if len(res.Perf) > 0 {
		t.Row(fmt.Sprintf("Kafka ProducerPerformance (Java, %d records)", c.PerfRecords), benchkit.Summarize(perfValues(res)).Format("%.0f"), "", "", "", "")
	}
	d.Table(t)
	if len(c.Batch) > 0 {
		b := c.Batch[0]
		cores := benchkit.Median(bridgeValues(res, b, func(r BridgeRun) float64 { return r.Cores }))
		if cores < 0.8 {
			d.Para("**The bridge was not the limit**: with %d records per post it used %.2f of its core (median), so its records/s are what the broker and the load generator on the other CPU (with whatever else ran on the machine) sustained; the records per CPU-second are the better measure of the bridge itself.", b, cores)
		}
	}
	d.Para("The bridge's records/s count records acknowledged to HTTP clients (200 after Kafka's acks); ProducerPerformance's are records acknowledged to the Java producer, with no HTTP in front. Records per CPU-second divide the bridge's records by the CPU time it used, what it would do with a whole core when the other CPU (broker and load generator) is the limit.")
	d.Section("Publish to consume latency")
	lt := benchkit.NewTable("lrrrr", "run", "achieved msg/s", "p50 ms", "p99 ms", "max ms")
	lt.Row(fmt.Sprintf("%d msg/s of %d B, franz-go producer (linger 0, acks=all) and consumer, %v each", c.LatencyRate, c.RecordBytes, c.LatencyDuration),
		benchkit.Summarize(latValues(res, func(r LatencyRun) float64 { return r.Rate })).Format("%.0f"),
		benchkit.Summarize(latValues(res, func(r LatencyRun) float64 { return r.P50ms })).Format("%.2f"),
		benchkit.Summarize(latValues(res, func(r LatencyRun) float64 { return r.P99ms })).Format("%.2f"),
		benchkit.Summarize(latValues(res, func(r LatencyRun) float64 { return r.MaxMs })).Format("%.2f"))
	d.Table(lt)
	d.Para("Latency is from each record's intended send time (open loop) to its receipt by a consumer in the same process (one clock), after %v of warm-up; the broker is not pinned here.", c.Warmup)
	d.Goals("Goals (issue 24)", res.Goals)
	return d.String()
}
