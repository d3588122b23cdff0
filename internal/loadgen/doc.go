// Package loadgen is the load engine of Continuum's workloads: it schedules requests against
// targets (open loop at a fixed rate, or closed loop with N clients), records their latency in
// HdrHistograms and writes the workload files of a results directory (docs/results-format.md,
// `workloads/<name>/`). It knows nothing about protocols: a Target adapter does one request
// (package httptarget for HTTP; YCSB and others follow the same shape).
//
// # Measurement model
//
// Open loop: request i of a series is intended at t0 + i/rate and its latency is measured from
// that intended time, not from when it was actually sent, so a stalled server is charged for the
// requests queued behind it (no coordinated omission). At most MaxInflight requests per series
// are outstanding; when the cap is hit the next request waits for a slot and the wait is part of
// its latency. A request that does not complete within Timeout of its intended time (waiting for
// a slot included) is a "timeout" error. Closed loop: each client sends, waits for the answer,
// optionally thinks, and repeats; the intended time is the send time.
//
// Requests are attributed to the second of their intended time (t_s = 0 covers [0 s, 1 s)): a
// timeseries row's sent/ok/errors and latency percentiles are those of the requests intended in
// that second, while its throughput_rps counts successful completions during that second.
// Requests intended in the warm-up [0, Warmup) appear in timeseries.csv and latency.hlog but not
// in stats.json, percentiles.csv or errors.csv. Only successful requests carry a latency.
//
// # Operation mixes
//
// A Series whose Target is MixTarget(m) is one schedule (one rate, or one set of clients) whose
// requests are of several types, each recorded as its own series named by m.Ops() (a YCSB
// workload's read and update share the arrival process but get separate histograms, rows and
// error counts). The Mix chooses each request when it is due. A Mix may run out (YCSB's
// operationcount): its schedule then ends, and once every schedule has ended Run stops early
// with status "ok", the measured window ending at that moment.
//
// # Progress lines
//
// When Config.Progress is set, Run writes one JSON object per line, every ProgressInterval
// (default 1 s), which the experiment runner parses (to show progress and fire after_requests
// events):
//
//	{"type":"progress","t_s":3,"sent":300,"ok":298,"errors":2,"throughput_rps":99,
//	 "series":{"edge":{"sent":300,"ok":298,"errors":2,"throughput_rps":99,"p50_ms":1.2,"p99_ms":3.4}}}
//
// sent/ok/errors are cumulative since t0 (warm-up included); throughput_rps is successful
// completions per second since the previous line; p50_ms/p99_ms are over the requests that
// completed successfully since the previous line (0 when there were none). The last line is
//
//	{"type":"done", ...same fields..., "status":"ok"|"interrupted"|"failed","stats_file":"<out>/stats.json"}
//
// where throughput_rps, p50_ms and p99_ms are the final (post-warm-up) statistics of stats.json.
// ProgressLine is the Go type of both lines.
//
// # Stopping
//
// Cancelling Run's context stops sending at once; requests in flight get up to Timeout to
// finish (then they are cancelled and count as "canceled" errors), every output is written for
// what was measured, and the status is "interrupted". Run returns no error in that case.
//
// # Nothing through
//
// A run that is not interrupted but has no successful request in its measured time (every
// request failed, or none was sent) ends with status "failed"; Result.Failure then says so in
// a line fit for a user, and commands exit with ExitNothingThrough. Config.CountSeries picks
// the series that count, for workloads whose one request yields several series.
package loadgen
