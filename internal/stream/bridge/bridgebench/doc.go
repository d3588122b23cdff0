// Package bridgebench is `continuum bench stream-bridge`: the bridge's throughput of 1 KB
// records on one core against Kafka's own producer perf tool at the same producer settings,
// and the broker's publish-to-consume latency at a fixed rate, on a real broker it starts.
package bridgebench
